package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.MutualExclusionChecker;
import io.dlock.testkit.PrimitivesContract;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;
import org.junit.jupiter.api.Test;

/**
 * Read-write locks, semaphores, multi-locks and the non-reentrant mutex on ZooKeeper (the testkit's
 * contract), and mixed fleets with Curator's {@code InterProcessMutex}.
 */
class ZooKeeperPrimitivesIT extends ZooKeeperTestSupport implements PrimitivesContract {

    @Override
    public List<String> readWriteEntries(String lock) {
        return children(lock);
    }

    @Override
    public List<String> semaphoreEntries(String lock) {
        return children(lock);
    }

    @Override
    public List<String> serverState() {
        return server.children("/" + namespace);
    }

    /** Expires the session that owns the lock's node, as the server does when a client goes silent. */
    @Override
    public void dropHolder(String lock) throws Exception {
        long session = rawClient()
                .exists("/" + namespace + "/" + lock + "/" + children(lock).get(0), false)
                .getEphemeralOwner();
        server.expireSession(session);
    }

    // ---- downgrade when the write node is already gone

    @Test
    void downgrade_ownWriteNodeGone_isAnOrdinaryReadBehindTheQueuedWriter() throws Exception {
        LockClient owner = client();
        LockClient other = client();
        Lease write = owner.readWriteLock("gone").writeLock().acquire();
        String writeNode = children("gone").get(0);
        CompletableFuture<Lease> queuedWriter =
                other.readWriteLock("gone").writeLock().acquireAsync(Duration.ofMinutes(1));
        await().until(() -> children("gone").size() == 2);
        // The write node vanishes behind the owner's back (an operator, a bug elsewhere): the
        // queued writer is let in, and a downgrade must not be granted beside it.
        rawClient().delete("/" + namespace + "/gone/" + writeNode, -1);
        Lease writer = queuedWriter.get(10, TimeUnit.SECONDS);
        assertThat(owner.readWriteLock("gone").readLock().tryAcquire(Duration.ofMillis(300)))
                .isEmpty();
        assertThat(children("gone")).hasSize(1).noneMatch(n -> n.contains("dg__READ__"));
        writer.close();
        write.close();
    }

    // ---- mixed fleets

    @Test
    void curatorInterProcessMutexAndDlock_samePath_excludeEachOther() throws Exception {
        MutualExclusionChecker checker = new MutualExclusionChecker();
        CuratorFramework curator = CuratorFrameworkFactory.newClient(server.connectString(), new RetryOneTime(100));
        curator.start();
        track(curator::close);
        String path = "/" + namespace + "/shared"; // dlock: namespace + lock name
        LockClient dlock = client();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            boolean useCurator = t % 2 == 0;
            String who = (useCurator ? "curator-" : "dlock-") + t;
            InterProcessMutex mutex = new InterProcessMutex(curator, path);
            DistributedLock lock = dlock.lock("shared");
            Thread thread = new Thread(() -> {
                try {
                    for (int i = 0; i < 100; i++) {
                        if (useCurator) {
                            mutex.acquire();
                            try {
                                checker.enter(who);
                                checker.incrementUnsafely();
                                checker.exit(who);
                            } finally {
                                mutex.release();
                            }
                        } else {
                            try (Lease lease = lock.acquire()) {
                                checker.enter(who);
                                checker.incrementUnsafely();
                                checker.exit(who);
                            }
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
            thread.start();
            threads.add(thread);
        }
        for (Thread t : threads) {
            t.join(TimeUnit.MINUTES.toMillis(2));
        }
        assertThat(failure.get()).isNull();
        assertThat(checker.counter()).isEqualTo(400);
        assertThat(checker.violations()).isZero();
        assertThat(children("shared")).isEmpty();
    }

    @Test
    void curatorHolds_dlockWaitsThenGetsIt() throws Exception {
        CuratorFramework curator = CuratorFrameworkFactory.newClient(server.connectString(), new RetryOneTime(100));
        curator.start();
        track(curator::close);
        InterProcessMutex mutex = new InterProcessMutex(curator, "/" + namespace + "/handover");
        mutex.acquire();
        LockClient dlock = client();
        assertThat(dlock.lock("handover").tryAcquire(Duration.ofMillis(300))).isEmpty();
        CompletableFuture<Lease> waiting = dlock.lock("handover").acquireAsync(Duration.ofMinutes(1));
        await().until(() -> children("handover").size() == 2);
        assertThat(mutex.acquire(200, TimeUnit.MILLISECONDS))
                .as("Curator re-enters its own lock")
                .isTrue();
        mutex.release();
        assertThat(waiting).isNotDone();
        mutex.release();
        Optional<Lease> got = Optional.of(waiting.get(10, TimeUnit.SECONDS));
        assertThat(got.get().isValid()).isTrue();
        assertThat(mutex.acquire(200, TimeUnit.MILLISECONDS))
                .as("Curator now waits for dlock")
                .isFalse();
        got.get().close();
    }
}
