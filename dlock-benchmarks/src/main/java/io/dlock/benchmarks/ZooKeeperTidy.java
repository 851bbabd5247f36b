package io.dlock.benchmarks;

import java.io.IOException;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.jspecify.annotations.Nullable;

/**
 * Deletes the lock parents a workload left on ZooKeeper, between workloads and outside every timed
 * phase.
 *
 * <p>Why: W4 leaves {@code --w4-locks} empty parents per implementation (100,000 by default). dlock's
 * and Curator's are containers, which the server removes at most 10,000 a minute ({@code
 * znode.container.maxPerMinute}); in the run of 2026-11-29 02:51 UTC the 300,000 of W4's three
 * implementations were being removed for half an hour, through W5, W6 and COST. Those deletes are
 * transactions of the server's own: they take its CPU from every implementation, and each one that
 * falls inside a dlock cycle stops the session's own count of writes from proving its node alone
 * (so the cycle reads the queue): COST counted 2.06 requests a cycle for dlock against 2.00 in runs
 * of W1 and COST alone, which is about 170 deletes a second against 2,400 cycles. Every later
 * workload should start on a server that is not still cleaning up after an earlier one.
 *
 * <p>Thread-safety: a static call, one at a time from the runner's thread; it blocks until every
 * delete is answered.
 */
final class ZooKeeperTidy {
    /** Deletes in flight at once: enough to keep the connection full, few enough to bound memory. */
    private static final int IN_FLIGHT = 1_000;

    private ZooKeeperTidy() {}

    /** What {@code impl} puts before a lock name to make its parent node's path, or null if it makes none. */
    static @Nullable String prefix(LockImpl impl) {
        return switch (impl) {
            case DLOCK_ZK, DLOCK_ZK_NO_LOCAL_QUEUE -> "/" + DlockAdapter.NAMESPACE + "/";
            case CURATOR -> CuratorAdapter.ROOT;
            case ZK_FLOOR, ZK_FLOOR_ASYNC, ZK_PROTOCOL, ZK_MULTI -> ZooKeeperFloorAdapter.ROOT + "/";
            default -> null;
        };
    }

    /** The parent paths of {@code names} under the roots of the ZooKeeper implementations among {@code impls}. */
    static List<String> parents(Collection<LockImpl> impls, Collection<String> names) {
        Set<String> paths = new LinkedHashSet<>();
        for (LockImpl impl : impls) {
            String prefix = prefix(impl);
            if (prefix != null) {
                names.forEach(n -> paths.add(prefix + n));
            }
        }
        return List.copyOf(paths);
    }

    /**
     * Deletes each of {@code paths} that exists and is empty; a missing or non-empty one is left as
     * it is.
     *
     * <p>Blocking: until every delete is answered, at most 10 minutes. On failure: an {@link
     * IllegalStateException} if the server cannot be reached or does not answer in time; a delete
     * that fails for another reason is counted in {@link Outcome#failed}.
     */
    static Outcome deleteEmpty(String connectString, List<String> paths) throws InterruptedException {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk;
        try {
            zk = new ZooKeeper(connectString, 30_000, event -> {
                if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    connected.countDown();
                }
            });
        } catch (IOException e) {
            throw new IllegalStateException("cannot open a ZooKeeper handle to " + connectString, e);
        }
        try {
            if (!connected.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("ZooKeeper at " + connectString + " did not connect in 30 s");
            }
            Semaphore slots = new Semaphore(IN_FLIGHT);
            AtomicLong deleted = new AtomicLong();
            AtomicLong failed = new AtomicLong();
            for (String path : paths) {
                slots.acquire();
                zk.delete(
                        path,
                        -1,
                        (rc, p, ctx) -> {
                            Code code = Code.get(rc);
                            if (code == Code.OK) {
                                deleted.incrementAndGet();
                            } else if (code != Code.NONODE && code != Code.NOTEMPTY) {
                                failed.incrementAndGet();
                            }
                            slots.release();
                        },
                        null);
            }
            if (!slots.tryAcquire(IN_FLIGHT, 10, TimeUnit.MINUTES)) {
                throw new IllegalStateException("deleting " + paths.size() + " parents did not finish in 10 minutes");
            }
            return new Outcome(deleted.get(), failed.get());
        } finally {
            zk.close();
        }
    }

    /** What {@link #deleteEmpty} did: parents deleted, and deletes that failed (not missing, not in use). */
    record Outcome(long deleted, long failed) {}
}
