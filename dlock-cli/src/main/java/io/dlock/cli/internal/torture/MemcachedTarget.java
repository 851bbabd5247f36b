package io.dlock.cli.internal.torture;

import io.dlock.cli.internal.DurationConverter;
import io.dlock.testkit.MemcachedServer;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * A memcached process started by the torture ({@code --uri embedded:memcached}). Memcached keeps
 * nothing on disk, so every server restart loses every key: the boot marker then quarantines the
 * server until a lease time (and a second of slack) has passed since it started, as no grant of its
 * former life can outlast that, and the fencing tokens must keep rising.
 *
 * <p>Thread-safety: the server handle is thread-safe; {@link #restartServer} is called from one
 * thread at a time.
 */
final class MemcachedTarget implements BackendTarget {
    private final MemcachedServer server;

    private MemcachedTarget(MemcachedServer server) {
        this.server = server;
    }

    static MemcachedTarget embedded() {
        return new MemcachedTarget(MemcachedServer.start());
    }

    @Override
    public String backend() {
        return "memcached";
    }

    @Override
    public String description() {
        return "Memcached (embedded memcached on 127.0.0.1:" + server.port() + ", loses everything on restart)";
    }

    @Override
    public InetSocketAddress serverAddress() {
        return new InetSocketAddress("127.0.0.1", server.port());
    }

    @Override
    public String clientUri(String proxy, String namespace, Duration expiry) {
        return "memcached://" + proxy + "?keyPrefix=" + namespace + "&leaseTime="
                + DurationConverter.toParameter(expiry);
    }

    @Override
    public boolean canRestartServer() {
        return true;
    }

    @Override
    public void restartServer(Duration downtime) {
        BackendTarget.bounce(server::kill, server::restart, downtime);
    }

    /** Lock and waiter keys; the fencing counters ({@code :t:}) stay by design and are not leftovers. */
    @Override
    public List<String> leftovers(String namespace) {
        List<String> found = new ArrayList<>();
        for (String k : server.keys(namespace + ":")) {
            if (!k.startsWith(namespace + ":t:")) {
                found.add(k);
            }
        }
        return found;
    }

    @Override
    public List<String> describeQueue(String namespace) {
        List<String> lines = new ArrayList<>();
        try {
            for (String key : leftovers(namespace)) {
                lines.add(key + " " + server.command("mg " + key + " v t c").replace('\n', ' '));
            }
        } catch (RuntimeException e) {
            lines.add("could not read the keys: " + e);
        }
        return lines;
    }

    @Override
    public void close() {
        server.close();
    }
}
