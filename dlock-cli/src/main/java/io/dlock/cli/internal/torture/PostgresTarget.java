package io.dlock.cli.internal.torture;

import io.dlock.cli.internal.DurationConverter;
import io.dlock.testkit.PostgresServer;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A PostgreSQL server started by the torture ({@code --uri embedded:postgres}), through the
 * testkit (as an unprivileged user when the torture runs as root). The run's namespace becomes the
 * lock table (created by the workers with {@code createTable=true}). A server restart is a fast
 * shutdown (SIGINT: every session ended at once) and a start on the same data: the lease table and
 * its tokens survive, and so must every lease that is renewed in time after it.
 *
 * <p>Thread-safety: the server handle is thread-safe; {@link #restartServer} is called from one
 * thread at a time.
 */
final class PostgresTarget implements BackendTarget {
    private final PostgresServer server;

    private PostgresTarget(PostgresServer server) {
        this.server = server;
    }

    static PostgresTarget embedded() {
        return new PostgresTarget(PostgresServer.start());
    }

    /** The run's namespace as a table name: letters, digits and '_'. */
    static String table(String namespace) {
        return namespace.replaceAll("[^A-Za-z0-9_]", "_");
    }

    @Override
    public String backend() {
        return "jdbc";
    }

    @Override
    public String description() {
        return "PostgreSQL (embedded postgres on 127.0.0.1:" + server.port() + ")";
    }

    @Override
    public InetSocketAddress serverAddress() {
        return new InetSocketAddress("127.0.0.1", server.port());
    }

    @Override
    public String clientUri(String proxy, String namespace, Duration expiry) {
        return "jdbc:postgresql://" + proxy + "/" + PostgresServer.DATABASE + "?user=" + PostgresServer.USER
                + "&password=" + PostgresServer.PASSWORD + "&dlockTable=" + table(namespace)
                + "&createTable=true&leaseTime=" + DurationConverter.toParameter(expiry);
    }

    @Override
    public boolean canRestartServer() {
        return true;
    }

    @Override
    public void restartServer(Duration downtime) {
        BackendTarget.bounce(server::stop, server::startAgain, downtime);
    }

    @Override
    public List<String> leftovers(String namespace) {
        String t = table(namespace);
        if (server.psql("SELECT count(*) FROM pg_tables WHERE tablename = '" + t + "'")
                .equals(List.of("0"))) {
            return List.of();
        }
        List<String> found = new ArrayList<>();
        found.addAll(server.psql("SELECT 'held ' || name || ' by ' || owner FROM " + t + " WHERE owner IS NOT NULL"
                + " AND expires_ms >= (EXTRACT(EPOCH FROM now()) * 1000)::bigint"));
        found.addAll(server.psql("SELECT 'waiting ' || name || ' ' || acquisition FROM " + t + "_waiters"
                + " WHERE expires_ms >= (EXTRACT(EPOCH FROM now()) * 1000)::bigint"));
        return found;
    }

    @Override
    public List<String> describeQueue(String namespace) {
        String t = table(namespace);
        List<String> lines = new ArrayList<>();
        try {
            lines.addAll(
                    server.psql("SELECT name, owner, client, token, expires_ms - (EXTRACT(EPOCH FROM now()) * 1000)"
                            + "::bigint AS remaining_ms, holder FROM " + t));
            lines.addAll(server.psql("SELECT 'waiter', seq, name, acquisition, client, expires_ms -"
                    + " (EXTRACT(EPOCH FROM now()) * 1000)::bigint FROM " + t + "_waiters ORDER BY seq"));
        } catch (RuntimeException e) {
            lines.add("could not read the lock table: " + e);
        }
        return lines;
    }

    @Override
    public void close() {
        server.close();
    }
}
