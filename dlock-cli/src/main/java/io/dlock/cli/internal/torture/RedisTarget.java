package io.dlock.cli.internal.torture;

import io.dlock.cli.internal.DurationConverter;
import io.dlock.testkit.RedisServer;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A redis-server process started by the torture ({@code --uri embedded:redis}), without
 * persistence: a server restart loses every key, which is exactly the case where the fencing
 * tokens must keep rising (they never go below the server's clock in microseconds).
 *
 * <p>Thread-safety: the server handle is thread-safe; {@link #restartServer} is called from one
 * thread at a time.
 */
final class RedisTarget implements BackendTarget {
    private final RedisServer server;
    private final boolean persistence;

    private RedisTarget(RedisServer server, boolean persistence) {
        this.server = server;
        this.persistence = persistence;
    }

    static RedisTarget embedded() {
        return new RedisTarget(RedisServer.start(), true);
    }

    /** A redis-server without persistence: every restart loses every key (dlock-redis's data-loss fence). */
    static RedisTarget volatileServer() {
        return new RedisTarget(RedisServer.builder().persistence(false).start(), false);
    }

    @Override
    public String backend() {
        return "redis";
    }

    @Override
    public String description() {
        return "Redis (embedded redis-server on 127.0.0.1:" + server.port()
                + (persistence ? ", AOF persistence)" : ", no persistence: a restart loses every key)");
    }

    @Override
    public InetSocketAddress serverAddress() {
        return new InetSocketAddress("127.0.0.1", server.port());
    }

    /**
     * Also marks the run's fresh prefix as continuous (its epoch marker, written only if missing):
     * nothing was ever granted under it, so the first grants need not wait out dlock-redis's
     * data-loss fence. A server restart that loses the data still fences as it should.
     */
    @Override
    public String clientUri(String proxy, String namespace, Duration expiry) {
        server.markFreshPrefix(namespace);
        return "redis://" + proxy + "?keyPrefix=" + namespace + "&leaseTime=" + DurationConverter.toParameter(expiry);
    }

    @Override
    public boolean canRestartServer() {
        return true;
    }

    @Override
    public void restartServer(Duration downtime) {
        BackendTarget.bounce(server::kill, server::restart, downtime);
    }

    /**
     * Every key under the run's prefix but the epoch marker, which dlock-redis keeps for good (it
     * records that the server's data is continuous, and the highest token granted).
     */
    @Override
    public List<String> leftovers(String namespace) {
        return leftovers(server, namespace);
    }

    /** Every key under {@code namespace} on {@code server} but the epoch marker. */
    static List<String> leftovers(RedisServer server, String namespace) {
        List<String> found = new ArrayList<>();
        if (server.command("KEYS", namespace + ":*") instanceof List<?> keys) {
            for (Object k : keys) {
                String key = String.valueOf(k);
                if (!key.endsWith(":epoch")) {
                    found.add(key);
                }
            }
        }
        return found;
    }

    @Override
    public List<String> describeQueue(String namespace) {
        return describeQueue(server, namespace);
    }

    /** One line per leftover key on {@code server}, with the entries of the queue's hash. */
    static List<String> describeQueue(RedisServer server, String namespace) {
        List<String> lines = new ArrayList<>();
        try {
            for (String key : leftovers(server, namespace)) {
                // The ':h' hash holds each entry's mode, permits, owner client and token.
                lines.add(key + (key.endsWith(":h") ? " " + server.command("HGETALL", key) : ""));
            }
        } catch (RuntimeException e) {
            lines.add("could not read the queue keys: " + e);
        }
        return lines;
    }

    @Override
    public void close() {
        server.close();
    }
}
