package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.DistributedLock;
import io.dlock.DistributedReadWriteLock;
import io.dlock.DistributedSemaphore;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.LockWorker;
import io.dlock.testkit.MutualExclusionChecker;
import io.dlock.testkit.Timing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.RetryOneTime;
import org.junit.jupiter.api.Test;

/** Read-write locks, semaphores, multi-locks, the non-reentrant mutex, and Curator interop. */
class ZooKeeperPrimitivesIT extends ZooKeeperTestSupport {

    // ---- read-write

    @Test
    void readLock_twoClients_holdAtOnce() throws Exception {
        try (Lease r1 = client().readWriteLock("rw").readLock().acquire();
                Lease r2 = client().readWriteLock("rw").readLock().tryAcquire(Duration.ofSeconds(5)).orElseThrow()) {
            assertThat(r1.isValid()).isTrue();
            assertThat(r2.isValid()).isTrue();
            assertThat(r2.fencingToken()).isGreaterThan(r1.fencingToken());
        }
    }

    @Test
    void writeLock_held_excludesReadersAndWriters() throws Exception {
        LockClient other = client();
        try (Lease w = client().readWriteLock("rw").writeLock().acquire()) {
            assertThat(other.readWriteLock("rw").readLock().tryAcquire(Duration.ofMillis(200))).isEmpty();
            assertThat(other.readWriteLock("rw").writeLock().tryAcquire(Duration.ofMillis(200))).isEmpty();
            assertThat(children("rw")).hasSize(1);
        }
        assertThat(other.readWriteLock("rw").writeLock().tryAcquire(Duration.ofSeconds(5))).isPresent();
    }

    @Test
    void writerQueuedBehindReader_grantedBeforeLaterReader() throws Exception {
        LockClient a = client();
        LockClient b = client();
        LockClient c = client();
        List<String> order = new CopyOnWriteArrayList<>();
        Lease first = a.readWriteLock("fair").readLock().acquire();
        CompletableFuture<Lease> writer = b.readWriteLock("fair").writeLock().acquireAsync(Duration.ofMinutes(1));
        writer.thenRun(() -> order.add("writer"));
        await().until(() -> children("fair").size() == 2);
        CompletableFuture<Lease> lateReader = c.readWriteLock("fair").readLock().acquireAsync(Duration.ofMinutes(1));
        lateReader.thenRun(() -> order.add("late reader"));
        await().until(() -> children("fair").size() == 3);
        // A stream of new readers must not starve the waiting writer.
        assertThat(lateReader).isNotDone();
        first.close();
        Lease w = writer.get(10, TimeUnit.SECONDS);
        assertThat(lateReader).isNotDone();
        w.close();
        lateReader.get(10, TimeUnit.SECONDS).close();
        assertThat(order).containsExactly("writer", "late reader");
    }

    @Test
    void writeLock_downgradeToRead_keepsReadersOutUntilWriteReleased() throws Exception {
        LockClient owner = client();
        LockClient other = client();
        DistributedReadWriteLock rw = owner.readWriteLock("down");
        Lease write = rw.writeLock().acquire();
        Lease read = rw.readLock().tryAcquire(Duration.ofSeconds(5)).orElseThrow(); // not blocked by its own writer
        assertThat(other.readWriteLock("down").readLock().tryAcquire(Duration.ZERO)).isEmpty();
        write.close(); // the downgrade: now only a reader
        assertThat(read.isValid()).isTrue();
        try (Lease otherRead = other.readWriteLock("down").readLock().tryAcquire(Duration.ofSeconds(5)).orElseThrow()) {
            assertThat(otherRead.isValid()).isTrue();
            // (From a third client: for this thread, holding otherRead, it would be an upgrade.)
            assertThat(client().readWriteLock("down").writeLock().tryAcquire(Duration.ofMillis(200))).isEmpty();
        }
        read.close();
        assertThat(other.readWriteLock("down").writeLock().tryAcquire(Duration.ofSeconds(5))).isPresent();
    }

    @Test
    void writeLock_downgradeWithAWriterQueued_isGrantedAtOnce() throws Exception {
        LockClient owner = client();
        LockClient other = client();
        DistributedReadWriteLock rw = owner.readWriteLock("down-queued");
        Lease write = rw.writeLock().acquire();
        CompletableFuture<Lease> queuedWriter = other.readWriteLock("down-queued").writeLock()
                .acquireAsync(Duration.ofMinutes(1));
        await().atMost(Timing.scale(Duration.ofSeconds(10))).until(() -> children("down-queued").size() == 2);
        // The read node lands behind the queued writer, which waits for this thread's write lock:
        // the reader must not wait for it, or the downgrade deadlocks.
        Lease read = rw.readLock().tryAcquire(Duration.ofSeconds(5)).orElseThrow();
        write.close();
        assertThat(queuedWriter).isNotDone(); // still a reader inside
        read.close();
        queuedWriter.get(10, TimeUnit.SECONDS).close();
        assertThat(children("down-queued")).isEmpty();
    }

    @Test
    void readLock_upgradeToWrite_failsAtOnceAndKeepsRead() throws Exception {
        DistributedReadWriteLock rw = client().readWriteLock("up");
        try (Lease read = rw.readLock().acquire()) {
            long start = System.nanoTime();
            assertThatThrownBy(() -> rw.writeLock().acquire())
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("upgrade")
                    .hasMessageContaining("'up'");
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(1000);
            assertThat(read.isValid()).isTrue();
            assertThat(children("up")).hasSize(1);
        }
    }

    // ---- semaphore

    @Test
    void semaphore_threePermitsTenClients_neverMoreThanThreeHolders() throws Exception {
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger maxInside = new AtomicInteger();
        AtomicInteger grants = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(10);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                DistributedSemaphore semaphore = client().semaphore("pool", 3);
                done.add(pool.submit(() -> {
                    for (int round = 0; round < 8; round++) {
                        try (Lease lease = semaphore.acquire(1)) {
                            int now = inside.incrementAndGet();
                            maxInside.accumulateAndGet(now, Math::max);
                            grants.incrementAndGet();
                            Thread.sleep(2);
                            inside.decrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(2, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(grants).hasValue(80);
        assertThat(maxInside.get()).isBetween(1, 3);
        assertThat(children("pool")).isEmpty();
    }

    @Test
    void semaphore_severalPermitsPerLease_countTowardsTotal() throws Exception {
        DistributedSemaphore sem = client().semaphore("multi", 5);
        DistributedSemaphore other = client().semaphore("multi", 5);
        try (Lease three = sem.acquire(3)) {
            assertThat(other.tryAcquire(3, Duration.ofMillis(200))).isEmpty();
            try (Lease two = other.tryAcquire(2, Duration.ofSeconds(5)).orElseThrow()) {
                assertThat(two.fencingToken()).isGreaterThan(three.fencingToken());
                assertThat(other.tryAcquire(1, Duration.ZERO)).isEmpty();
            }
        }
        assertThat(other.tryAcquire(5, Duration.ofSeconds(5))).isPresent();
    }

    @Test
    void semaphore_killedHolder_permitsComeBack() throws Exception {
        DistributedSemaphore sem = client().semaphore("crash", 2);
        try (ChildJvm holder = ChildJvm.start(LockWorker.class,
                List.of("permits", uri("sessionTimeout=2s"), "crash", "2", "2"))) {
            holder.awaitLine("HOLDING", Timing.scale(Duration.ofSeconds(30)));
            assertThat(sem.tryAcquire(1, Duration.ZERO)).isEmpty();
            holder.kill();
            try (Lease back = sem.tryAcquire(2, Timing.scale(Duration.ofSeconds(10))).orElseThrow()) {
                assertThat(back.isValid()).isTrue();
            }
        }
    }

    @Test
    void semaphore_badInput_clearErrors() throws Exception {
        LockClient client = client();
        assertThatThrownBy(() -> client.semaphore("s", 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least 1");
        assertThatThrownBy(() -> client.semaphore("s", -2)).isInstanceOf(IllegalArgumentException.class);
        DistributedSemaphore three = client.semaphore("s", 3);
        assertThatThrownBy(() -> three.acquire(4)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("4").hasMessageContaining("3");
        assertThatThrownBy(() -> three.tryAcquire(0, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> three.tryAcquire(1, Duration.ofSeconds(-1))).isInstanceOf(IllegalArgumentException.class);
        assertThat(server.children("/" + namespace)).isEmpty();
        try (Lease held = three.acquire(1)) {
            DistributedSemaphore five = client().semaphore("s", 5);
            assertThatThrownBy(() -> five.tryAcquire(1, Duration.ofSeconds(5)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("3 permits")
                    .hasMessageContaining("5");
            assertThat(children("s")).hasSize(1);
        }
    }

    // ---- multi-lock

    @Test
    void multiLock_oppositeOrders_noDeadlockInThousandRounds() throws Exception {
        LockClient a = client();
        LockClient b = client();
        DistributedLock ab = a.multiLock(List.of("a", "b"));
        DistributedLock ba = b.multiLock(List.of("b", "a"));
        MutualExclusionChecker checker = new MutualExclusionChecker();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t1 = worker(ab, "ab", checker, failure);
        Thread t2 = worker(ba, "ba", checker, failure);
        t1.join(TimeUnit.MINUTES.toMillis(3));
        t2.join(TimeUnit.MINUTES.toMillis(3));
        assertThat(failure.get()).isNull();
        assertThat(t1.isAlive() || t2.isAlive()).as("deadlocked").isFalse();
        assertThat(checker.counter()).isEqualTo(1000);
        assertThat(checker.violations()).isZero();
    }

    private static Thread worker(DistributedLock lock, String who, MutualExclusionChecker checker,
            AtomicReference<Throwable> failure) {
        Thread t = new Thread(() -> {
            try {
                for (int i = 0; i < 500; i++) {
                    try (Lease lease = lock.tryAcquire(Duration.ofSeconds(30)).orElseThrow()) {
                        checker.enter(who);
                        checker.incrementUnsafely();
                        checker.exit(who);
                    }
                }
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        });
        t.start();
        return t;
    }

    @Test
    void multiLock_partTimesOut_releasesPartsAlreadyHeld() throws Exception {
        LockClient holder = client();
        LockClient other = client();
        try (Lease b = holder.lock("b").acquire()) {
            assertThat(other.multiLock(List.of("a", "b")).tryAcquire(Duration.ofMillis(300))).isEmpty();
            assertThat(children("a")).isEmpty(); // "a" was taken first and given back
            assertThat(children("b")).hasSize(1);
            CompletableFuture<Lease> async = other.multiLock(List.of("a", "b")).acquireAsync(Duration.ofMillis(300));
            assertThatThrownBy(() -> async.get(10, TimeUnit.SECONDS)).hasCauseInstanceOf(io.dlock.LockTimeoutException.class);
            await().atMost(Duration.ofSeconds(5)).until(() -> children("a").isEmpty());
        }
        try (Lease both = other.multiLock(List.of("b", "a")).acquire()) {
            assertThat(both.lockName()).isEqualTo("a,b");
            assertThat(holder.lock("a").tryAcquire(Duration.ZERO)).isEmpty();
            assertThat(holder.lock("b").tryAcquire(Duration.ZERO)).isEmpty();
        }
    }

    @Test
    void multiLock_partLost_leaseInvalidAndOnLostOnce() throws Exception {
        LockClient client = client();
        Lease both = client.multiLock(List.of("x", "y")).acquire();
        AtomicInteger lost = new AtomicInteger();
        both.onLost(e -> lost.incrementAndGet());
        long session = rawClient().exists("/" + namespace + "/x/" + children("x").get(0), false).getEphemeralOwner();
        server.expireSession(session);
        await().atMost(Timing.scale(Duration.ofSeconds(15))).until(() -> !both.isValid());
        await().atMost(Duration.ofSeconds(5)).until(() -> lost.get() == 1);
        both.close();
        assertThat(lost).hasValue(1);
    }

    @Test
    void multiLock_badInput_clearErrors() {
        LockClient client = client();
        assertThatThrownBy(() -> client.multiLock(List.of())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least one");
        assertThatThrownBy(() -> client.multiLock(List.of("a", "b", "a"))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'a' appears twice");
        assertThatThrownBy(() -> client.multiLock(List.of("a", "../b"))).isInstanceOf(IllegalArgumentException.class);
    }

    // ---- non-reentrant mutex

    @Test
    void nonReentrant_sameThreadWaits_andAnotherThreadMayRelease() throws Exception {
        LockClient client = client(LockOptions.builder().reentrant(false).build());
        DistributedLock mutex = client.lock("mutex");
        Lease lease = mutex.acquire();
        assertThat(mutex.tryAcquire(Duration.ofMillis(300))).as("no re-entry").isEmpty();
        assertThat(children("mutex")).hasSize(1);
        Thread releaser = new Thread(lease::close);
        releaser.start();
        releaser.join(10_000);
        assertThat(lease.isValid()).isFalse();
        try (Lease again = mutex.tryAcquire(Duration.ofSeconds(5)).orElseThrow()) {
            assertThat(again.fencingToken()).isGreaterThan(lease.fencingToken());
        }
        assertThat(LockClient.connect(uri("reentrant=false")).lock("x").name()).isEqualTo("x");
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
        assertThat(mutex.acquire(200, TimeUnit.MILLISECONDS)).as("Curator re-enters its own lock").isTrue();
        mutex.release();
        assertThat(waiting).isNotDone();
        mutex.release();
        Optional<Lease> got = Optional.of(waiting.get(10, TimeUnit.SECONDS));
        assertThat(got.get().isValid()).isTrue();
        assertThat(mutex.acquire(200, TimeUnit.MILLISECONDS)).as("Curator now waits for dlock").isFalse();
        got.get().close();
    }
}
