package io.dlock.benchmarks.torture;

import io.dlock.cli.internal.torture.TortureWorker;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
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
 * <p>With {@code --primitive election}, a candidate on Curator's {@code LeaderLatch}, as its
 * documentation shows: {@code start()}, {@code await(time, unit)}, {@code hasLeadership()} and a
 * {@code LeaderLatchListener}. Curator gives a term no number; the run numbers it by the creation
 * zxid of the latch's own node (the lowest node leads), which a user can read and pass to a
 * resource as a fencing token, and fences with it. Not by the node's sequence number: that counts
 * from the parent's child changes, and the parent is a container node ZooKeeper deletes once it is
 * empty (after every candidate's session expired in a server restart), so the numbers start again.
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
        if (List.of(args).contains("--primitive")
                && "election".equals(args[List.of(args).indexOf("--primitive") + 1])) {
            TortureWorker.runAnchorElection(args, LatchAnchor::open);
        } else {
            TortureWorker.runAnchor(args, CuratorAnchor::open);
        }
    }

    /** A started client for the worker's {@code --uri} (one server, {@code sessionTimeout}, namespace). */
    private static CuratorFramework connect(
            Map<String, String> options, java.util.function.Consumer<CuratorFramework> beforeStart) {
        URI uri = AnchorUris.uri(options, "zookeeper");
        int session = Math.toIntExact(AnchorUris.duration(uri, "sessionTimeout").toMillis());
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
        beforeStart.accept(client);
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
        return client;
    }

    /** A candidate on a {@code LeaderLatch} at {@code /<lock>}. */
    private static final class LatchAnchor implements TortureWorker.AnchorElection {
        private final CuratorFramework client;
        private final LeaderLatch latch;
        private volatile long term = -1;
        private @Nullable String numbered; // the node whose number `term` is, read once per node

        private LatchAnchor(CuratorFramework client, String lock, String id) {
            this.client = client;
            this.latch = new LeaderLatch(client, "/" + lock, id);
            latch.addListener(new LeaderLatchListener() {
                @Override
                public void isLeader() {}

                @Override
                public void notLeader() {
                    long ended = term;
                    if (ended >= 0) {
                        TortureWorker.revoked(ended);
                    }
                }
            });
        }

        static LatchAnchor open(Map<String, String> options) {
            CuratorFramework client = connect(options, c -> {});
            LatchAnchor anchor =
                    new LatchAnchor(client, AnchorUris.lockName(options), String.valueOf(options.get("client")));
            try {
                anchor.latch.start();
            } catch (Exception e) {
                client.close();
                throw new IllegalStateException("LeaderLatch.start failed: " + e, e);
            }
            return anchor;
        }

        @Override
        public Optional<TortureWorker.AnchorTerm> awaitLeadership(Duration wait) throws Exception {
            if (!latch.await(wait.toMillis(), TimeUnit.MILLISECONDS)) {
                return Optional.empty();
            }
            String node = latch.getOurPath();
            if (node == null || !latch.hasLeadership() || !node.equals(latch.getOurPath())) {
                return Optional.empty(); // the latch moved on between the calls
            }
            if (!node.equals(numbered)) {
                Stat stat = client.checkExists().forPath(node);
                if (stat == null) {
                    return Optional.empty(); // deleted meanwhile: the latch will reset
                }
                term = stat.getCzxid();
                numbered = node;
            }
            long number = term;
            return Optional.of(new TortureWorker.AnchorTerm() {
                @Override
                public long token() {
                    return number;
                }

                @Override
                public boolean stillHeld() {
                    return latch.hasLeadership() && node.equals(latch.getOurPath());
                }
            });
        }

        @Override
        public void close() {
            try {
                latch.close();
            } catch (Exception e) {
                // the client closes next: the node goes with its session
            } finally {
                client.close();
            }
        }
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
            CuratorAnchor[] anchor = new CuratorAnchor[1];
            connect(options, client -> {
                anchor[0] = new CuratorAnchor(client, AnchorUris.lockName(options));
                client.getConnectionStateListenable().addListener((c, newState) -> anchor[0].changed(newState));
            });
            return anchor[0];
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
