package io.dlock.benchmarks.torture;

import io.dlock.cli.internal.torture.TortureWorker;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.data.Stat;
import org.jspecify.annotations.Nullable;

/**
 * A torture worker on Apache Curator's {@code InterProcessMutex}, used as Curator's documentation
 * shows: one client, one mutex, {@code acquire(time, unit)} and {@code release()} on one thread.
 *
 * <p>Careful ({@code --check-valid}): Curator's lock recipes tell users to add a {@code
 * ConnectionStateListener} and watch for {@code SUSPENDED} and {@code LOST}: after {@code SUSPENDED}
 * the holder cannot be sure of the lock unless {@code RECONNECTED} follows, after {@code LOST} it
 * is certain it no longer holds it. So a grant is taken as still held while no {@code LOST} came
 * since it and the last state is not {@code SUSPENDED} (nor {@code LOST}). Curator has no fencing
 * token; the run's token is the lock node's creation zxid (read once after the grant, as dlock's
 * ZooKeeper token is), used only to tell which write was stale.
 *
 * <p>Thread-safety: a process entry point.
 */
public final class CuratorTortureWorker {
    private CuratorTortureWorker() {}

    /**
     * Runs the worker; see {@link TortureWorker} for the options and the protocol.
     *
     * @param args {@code --name value} pairs
     */
    public static void main(String[] args) {
        TortureWorker.runAnchor(args, CuratorAnchor::open);
    }

    /** Exposes the node the mutex holds (Curator keeps it protected). */
    private static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path) {
            super(client, path);
        }

        @Nullable
        String node() {
            return getLockPath();
        }
    }

    private static final class CuratorAnchor implements TortureWorker.AnchorLock {
        private final CuratorFramework client;
        private final Mutex mutex;
        private final AtomicLong losses = new AtomicLong();
        private volatile ConnectionState state = ConnectionState.CONNECTED;
        private volatile long heldToken = -1;

        private CuratorAnchor(CuratorFramework client, String lock) {
            this.client = client;
            this.mutex = new Mutex(client, "/" + lock);
        }

        static CuratorAnchor open(Map<String, String> options) {
            URI uri = AnchorUris.uri(options, "zookeeper");
            int session =
                    Math.toIntExact(AnchorUris.duration(uri, "sessionTimeout").toMillis());
            String path = uri.getPath() == null ? "" : uri.getPath().replaceFirst("^/", "");
            CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
                    .connectString(uri.getHost() + ":" + uri.getPort())
                    .sessionTimeoutMs(session)
                    .connectionTimeoutMs(session)
                    .retryPolicy(new ExponentialBackoffRetry(100, 5));
            if (!path.isEmpty()) {
                builder.namespace(path);
            }
            CuratorFramework client = builder.build();
            CuratorAnchor anchor = new CuratorAnchor(client, AnchorUris.lockName(options));
            client.getConnectionStateListenable().addListener((c, newState) -> anchor.changed(newState));
            client.start();
            try {
                if (!client.blockUntilConnected(30, TimeUnit.SECONDS)) {
                    client.close();
                    throw new IllegalStateException("Curator could not connect to " + uri);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                client.close();
                throw new IllegalStateException("interrupted", e);
            }
            return anchor;
        }

        private void changed(ConnectionState newState) {
            state = newState;
            if (newState == ConnectionState.LOST) {
                losses.incrementAndGet();
                long token = heldToken;
                if (token >= 0) {
                    TortureWorker.lost(token);
                }
            }
        }

        @Override
        public Optional<TortureWorker.AnchorLease> tryAcquire(Duration wait) throws Exception {
            long lossesBefore = losses.get();
            if (!mutex.acquire(wait.toMillis(), TimeUnit.MILLISECONDS)) {
                return Optional.empty();
            }
            String node = Objects.requireNonNull(mutex.node(), "the mutex's node");
            Stat stat;
            try {
                stat = client.checkExists().forPath(node);
            } catch (Exception e) {
                mutex.release();
                throw e;
            }
            if (stat == null) {
                mutex.release();
                throw new IllegalStateException("the lock node " + node + " is gone right after the grant");
            }
            long token = stat.getCzxid();
            heldToken = token;
            return Optional.of(new TortureWorker.AnchorLease() {
                @Override
                public long token() {
                    return token;
                }

                @Override
                public boolean stillHeld() {
                    ConnectionState now = state;
                    return losses.get() == lossesBefore
                            && now != ConnectionState.SUSPENDED
                            && now != ConnectionState.LOST;
                }

                @Override
                public void release() throws Exception {
                    heldToken = -1;
                    mutex.release();
                }
            });
        }

        @Override
        public void close() {
            client.close();
        }
    }
}
