package io.dlock.cli.internal.torture;

import io.dlock.cli.internal.DurationConverter;
import io.dlock.testkit.EtcdServer;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * An etcd process started by the torture ({@code --uri embedded:etcd}): one member, data kept across
 * a server restart (etcd syncs its log before it answers), so leases and keys survive it, as on a
 * real cluster.
 *
 * <p>Thread-safety: the server handle and the jetcd client are thread-safe; {@link #restartServer}
 * is called from one thread at a time.
 */
final class EtcdTarget implements BackendTarget {
    private final EtcdServer server;
    /** Reads what dlock left, straight from the server (not through a proxy). */
    private final Client inspector;

    private EtcdTarget(EtcdServer server) {
        this.server = server;
        this.inspector =
                Client.builder().endpoints("http://" + server.connectString()).build();
    }

    static EtcdTarget embedded() {
        return new EtcdTarget(EtcdServer.start());
    }

    @Override
    public String backend() {
        return "etcd";
    }

    @Override
    public String description() {
        return "etcd (embedded single member on 127.0.0.1:" + server.port() + ")";
    }

    @Override
    public InetSocketAddress serverAddress() {
        return new InetSocketAddress("127.0.0.1", server.port());
    }

    @Override
    public String clientUri(String proxy, String namespace, Duration expiry) {
        // A fresh namespace on a server of the run's own: nothing was ever granted there, so the
        // first grants need not wait out dlock-etcd's data-loss fence. A restart that loses the
        // data still fences as it should.
        server.markFreshNamespace(namespace);
        return "etcd://" + proxy + "/" + namespace + "?leaseTime=" + DurationConverter.toParameter(expiry);
    }

    @Override
    public boolean canRestartServer() {
        return true;
    }

    @Override
    public void restartServer(Duration downtime) {
        BackendTarget.bounce(server::kill, server::restart, downtime);
    }

    private List<KeyValue> keys(String namespace) {
        try {
            return inspector
                    .getKVClient()
                    .get(
                            ByteSequence.from(namespace + "/", StandardCharsets.UTF_8),
                            GetOption.builder().isPrefix(true).build())
                    .get(10, TimeUnit.SECONDS)
                    .getKvs();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while reading " + namespace + "/ from " + server, e);
        } catch (Exception e) {
            throw new IllegalStateException("cannot read " + namespace + "/ from " + server + ": " + e, e);
        }
    }

    /** Every key under {@code namespace} but its epoch marker ({@code <namespace>//#epoch}), which stays by design. */
    @Override
    public List<String> leftovers(String namespace) {
        List<String> found = new ArrayList<>();
        for (KeyValue kv : keys(namespace)) {
            String key = kv.getKey().toString(StandardCharsets.UTF_8);
            if (!key.equals(namespace + "//#epoch")) {
                found.add(key);
            }
        }
        return found;
    }

    @Override
    public List<String> describeQueue(String namespace) {
        List<String> lines = new ArrayList<>();
        try {
            for (KeyValue kv : keys(namespace)) {
                lines.add(kv.getKey().toString(StandardCharsets.UTF_8) + " = "
                        + kv.getValue().toString(StandardCharsets.UTF_8) + " (create revision " + kv.getCreateRevision()
                        + ", lease "
                        + Long.toHexString(kv.getLease()) + ")");
            }
        } catch (RuntimeException e) {
            lines.add("could not read the queue keys: " + e);
        }
        return lines;
    }

    @Override
    public void close() {
        try {
            inspector.close();
        } finally {
            server.close();
        }
    }
}
