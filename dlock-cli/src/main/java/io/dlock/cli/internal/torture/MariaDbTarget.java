package io.dlock.cli.internal.torture;

import io.dlock.cli.internal.DurationConverter;
import io.dlock.testkit.MariaDbServer;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A MariaDB server started by the torture ({@code --uri embedded:mariadb}), through the testkit.
 * The run's namespace becomes the lock table (created by the workers with {@code createTable=true}).
 * A server restart is a SIGKILL (a crash; InnoDB recovers what the OS had) and a start on the same
 * data: the lease table and its tokens survive.
 *
 * <p>Thread-safety: the server handle is thread-safe; {@link #restartServer} is called from one
 * thread at a time.
 */
final class MariaDbTarget implements BackendTarget {
    /** The server's clock in epoch ms, as dlock-jdbc reads it on MariaDB (UTC arithmetic). */
    private static final String NOW_MS =
            "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)";

    private final MariaDbServer server;
    /** Clients in session mode ({@code GET_LOCK} on a pinned connection) instead of lease mode. */
    private final boolean session;

    private MariaDbTarget(MariaDbServer server, boolean session) {
        this.server = server;
        this.session = session;
    }

    static MariaDbTarget embedded(boolean session) {
        return new MariaDbTarget(MariaDbServer.start(), session);
    }

    @Override
    public String backend() {
        return "jdbc";
    }

    @Override
    public String description() {
        return "MariaDB (embedded mariadbd on 127.0.0.1:" + server.port() + (session ? ", mode=session" : "") + ")";
    }

    @Override
    public InetSocketAddress serverAddress() {
        return new InetSocketAddress("127.0.0.1", server.port());
    }

    @Override
    public String clientUri(String proxy, String namespace, Duration expiry) {
        return "jdbc:mariadb://" + proxy + "/" + MariaDbServer.DATABASE + "?user=" + MariaDbServer.USER
                + "&password=" + MariaDbServer.PASSWORD + "&dlockTable=" + PostgresTarget.table(namespace)
                + "&createTable=true&leaseTime=" + DurationConverter.toParameter(expiry)
                + (session ? "&mode=session" : "");
    }

    @Override
    public boolean canRestartServer() {
        return true;
    }

    @Override
    public void restartServer(Duration downtime) {
        BackendTarget.bounce(server::kill, server::restart, downtime);
    }

    @Override
    public List<String> leftovers(String namespace) {
        String t = MariaDbServer.DATABASE + "." + PostgresTarget.table(namespace);
        String tables = server.sql("SELECT count(*) FROM information_schema.tables WHERE table_schema = '"
                + MariaDbServer.DATABASE + "' AND table_name = '" + PostgresTarget.table(namespace) + "'");
        if (tables.equals("0")) {
            return List.of();
        }
        List<String> found = new ArrayList<>();
        lines(
                found,
                server.sql("SELECT CONCAT('held ', name, ' by ', owner) FROM " + t
                        + " WHERE owner IS NOT NULL AND expires_ms >= " + NOW_MS));
        lines(
                found,
                server.sql("SELECT CONCAT('waiting ', name, ' ', acquisition) FROM " + t + "_waiters"
                        + " WHERE expires_ms >= " + NOW_MS));
        return found;
    }

    @Override
    public List<String> describeQueue(String namespace) {
        String t = MariaDbServer.DATABASE + "." + PostgresTarget.table(namespace);
        List<String> lines = new ArrayList<>();
        try {
            lines(
                    lines,
                    server.sql("SELECT name, owner, client, token, expires_ms - " + NOW_MS + ", holder FROM " + t));
            lines(
                    lines,
                    server.sql("SELECT 'waiter', seq, name, acquisition, client, expires_ms - " + NOW_MS + " FROM " + t
                            + "_waiters ORDER BY seq"));
        } catch (RuntimeException e) {
            lines.add("could not read the lock table: " + e);
        }
        return lines;
    }

    private static void lines(List<String> into, String output) {
        output.lines().filter(l -> !l.isBlank()).forEach(into::add);
    }

    @Override
    public void close() {
        server.close();
    }
}
