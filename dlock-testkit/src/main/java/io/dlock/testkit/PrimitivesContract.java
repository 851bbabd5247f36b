package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.DistributedLock;
import io.dlock.DistributedReadWriteLock;
import io.dlock.DistributedSemaphore;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * What every backend's read-write lock, semaphore, multi-lock and non-reentrant mutex must do,
 * through the public API against a real server: a JUnit 5 test interface, the companion of {@link
 * ExclusiveLockContract}. A backend's IT implements it on top of its {@link LockFixture} and the
 * hooks below.
 */
public interface PrimitivesContract extends LockFixture {

    /** The entries (holders and waiters, in queue order) the server keeps for read-write lock {@code lock}. */
    List<String> readWriteEntries(String lock);

    /** The entries (holders and waiters, in queue order) the server keeps for semaphore {@code lock}. */
    List<String> semaphoreEntries(String lock);

    /** Everything the server keeps for this test (nodes, keys), whatever the lock. */
    List<String> serverState();

    /**
     * Makes the server forget the holder of exclusive lock {@code lock}, as an expired session or
     * lease would, without telling the holding client.
     */
    void dropHolder(String lock) throws Exception;

    // ---- read-write

    @Test
    default void readLock_twoClients_holdAtOnceWithIncreasingTokens() throws Exception {
        try (Lease r1 = newClient().readWriteLock("rw").readLock().acquire();
                Lease r2 = newClient()
                        .readWriteLock("rw")
                        .readLock()
                        .tryAcquire(Duration.ofSeconds(5))
                        .orElseThrow()) {
            assertThat(r1.isValid()).isTrue();
            assertThat(r2.isValid()).isTrue();
            assertThat(r2.fencingToken()).isGreaterThan(r1.fencingToken());
            assertThat(readWriteEntries("rw")).hasSize(2);
        }
        assertThat(readWriteEntries("rw")).isEmpty();
    }

    @Test
    default void writeLock_held_excludesReadersAndWriters() throws Exception {
        LockClient other = newClient();
        try (Lease w = newClient().readWriteLock("rw").writeLock().acquire()) {
            assertThat(other.readWriteLock("rw").readLock().tryAcquire(Duration.ofMillis(200)))
                    .isEmpty();
            assertThat(other.readWriteLock("rw").writeLock().tryAcquire(Duration.ofMillis(200)))
                    .isEmpty();
            assertThat(readWriteEntries("rw")).hasSize(1); // the timed-out waiters left nothing
        }
        assertThat(other.readWriteLock("rw").writeLock().tryAcquire(Duration.ofSeconds(5)))
                .isPresent();
    }

    @Test
    default void writerQueuedBehindReaders_grantedBeforeLaterReader() throws Exception {
        LockClient a = newClient();
        LockClient b = newClient();
        LockClient c = newClient();
        List<String> order = new CopyOnWriteArrayList<>();
        Lease r1 = a.readWriteLock("fair").readLock().acquire();
        Lease r2 = b.readWriteLock("fair").readLock().tryAcquire(Duration.ZERO).orElseThrow();
        CompletableFuture<Lease> writer = c.readWriteLock("fair").writeLock().acquireAsync(Duration.ofMinutes(1));
        writer.thenRun(() -> order.add("writer"));
        await().until(() -> readWriteEntries("fair").size() == 3);
        // A stream of new readers must not starve the waiting writer.
        CompletableFuture<Lease> lateReader =
                newClient().readWriteLock("fair").readLock().acquireAsync(Duration.ofMinutes(1));
        lateReader.thenRun(() -> order.add("late reader"));
        await().until(() -> readWriteEntries("fair").size() == 4);
        assertThat(lateReader).isNotDone();
        r1.close();
        assertThat(writer).isNotDone(); // one reader still inside
        r2.close();
        Lease w = writer.get(10, TimeUnit.SECONDS);
        assertThat(w.fencingToken()).isGreaterThan(r2.fencingToken());
        assertThat(lateReader).isNotDone();
        w.close();
        lateReader.get(10, TimeUnit.SECONDS).close();
        assertThat(order).containsExactly("writer", "late reader");
        assertThat(readWriteEntries("fair")).isEmpty();
    }

    @Test
    default void writeLock_twoWritersTwoReaders_writersExcludeEveryone() throws Exception {
        LockClient[] clients = {newClient(), newClient()};
        MutualExclusionChecker writers = new MutualExclusionChecker();
        AtomicInteger readersInside = new AtomicInteger();
        AtomicInteger overlap = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                DistributedReadWriteLock rw = clients[t % 2].readWriteLock("mix");
                boolean writer = t < 2;
                String who = "t" + t;
                done.add(pool.submit(() -> {
                    for (int i = 0; i < 60; i++) {
                        if (writer) {
                            try (Lease l = rw.writeLock().acquire()) {
                                writers.enter(who);
                                if (readersInside.get() > 0) {
                                    overlap.incrementAndGet();
                                }
                                writers.incrementUnsafely();
                                writers.exit(who);
                            }
                        } else {
                            try (Lease l = rw.readLock().acquire()) {
                                readersInside.incrementAndGet();
                                if (writers.inside() > 0) {
                                    overlap.incrementAndGet();
                                }
                                readersInside.decrementAndGet();
                            }
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
        assertThat(writers.counter()).isEqualTo(120);
        assertThat(writers.violations()).isZero();
        assertThat(overlap).hasValue(0);
        assertThat(readWriteEntries("mix")).isEmpty();
    }

    @Test
    default void writeLock_downgradeToRead_keepsOthersOutUntilWriteReleased() throws Exception {
        LockClient owner = newClient();
        LockClient other = newClient();
        DistributedReadWriteLock rw = owner.readWriteLock("down");
        Lease write = rw.writeLock().acquire();
        Lease read = rw.readLock().tryAcquire(Duration.ofSeconds(5)).orElseThrow(); // not blocked by its own writer
        assertThat(other.readWriteLock("down").readLock().tryAcquire(Duration.ZERO))
                .isEmpty();
        write.close(); // the downgrade: now only a reader
        assertThat(read.isValid()).isTrue();
        try (Lease otherRead = other.readWriteLock("down")
                .readLock()
                .tryAcquire(Duration.ofSeconds(5))
                .orElseThrow()) {
            assertThat(otherRead.isValid()).isTrue();
            // (From a third client: for this thread, holding otherRead, it would be an upgrade.)
            assertThat(newClient().readWriteLock("down").writeLock().tryAcquire(Duration.ofMillis(200)))
                    .isEmpty();
        }
        read.close();
        assertThat(other.readWriteLock("down").writeLock().tryAcquire(Duration.ofSeconds(5)))
                .isPresent();
    }

    @Test
    default void writeLock_downgradeWithAWriterQueued_isGrantedAtOnce() throws Exception {
        LockClient owner = newClient();
        LockClient other = newClient();
        DistributedReadWriteLock rw = owner.readWriteLock("down-queued");
        Lease write = rw.writeLock().acquire();
        CompletableFuture<Lease> queuedWriter =
                other.readWriteLock("down-queued").writeLock().acquireAsync(Duration.ofMinutes(1));
        await().atMost(Timing.scale(Duration.ofSeconds(10)))
                .until(() -> readWriteEntries("down-queued").size() == 2);
        // The read lands behind the queued writer, which waits for this thread's write lock: the
        // read must not wait for it, or the downgrade deadlocks.
        Lease read = rw.readLock().tryAcquire(Duration.ofSeconds(5)).orElseThrow();
        write.close();
        // Still read-locked: neither the queued writer nor a new reader behind it may get in.
        assertThat(newClient().readWriteLock("down-queued").readLock().tryAcquire(Duration.ZERO))
                .isEmpty();
        await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(5)).until(() -> !queuedWriter.isDone());
        read.close();
        queuedWriter.get(10, TimeUnit.SECONDS).close();
        assertThat(readWriteEntries("down-queued")).isEmpty();
    }

    @Test
    default void writeLock_downgradeWithAWriterQueued_tokensRiseInGrantOrder() throws Exception {
        LockClient owner = newClient();
        if (!owner.capabilities().contains(io.dlock.Capability.READ_WRITE)) {
            assertThatThrownBy(() -> owner.readWriteLock("down-tokens"))
                    .isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining("READ_WRITE");
            return;
        }
        DistributedReadWriteLock rw = owner.readWriteLock("down-tokens");
        Lease write = rw.writeLock().acquire();
        CompletableFuture<Lease> queuedWriter =
                newClient().readWriteLock("down-tokens").writeLock().acquireAsync(Duration.ofMinutes(1));
        await().atMost(Timing.scale(Duration.ofSeconds(10)))
                .until(() -> readWriteEntries("down-tokens").size() == 2);
        Lease read = rw.readLock().tryAcquire(Duration.ofSeconds(5)).orElseThrow();
        write.close();
        read.close();
        Lease next = queuedWriter.get(10, TimeUnit.SECONDS);
        // Grant order: write, its downgraded read, then the queued writer.
        assertThat(read.fencingToken()).isGreaterThan(write.fencingToken());
        assertThat(next.fencingToken()).isGreaterThan(read.fencingToken());
        next.close();
    }

    /**
     * A long downgrade loop: each read under the write takes a token in the write's unused local bits,
     * then repeats the last one; none reaches the queued writer's (they used to rise by one per read
     * without bound and pass it after 1,024 reads).
     */
    @Test
    default void writeLock_twoThousandDowngradesWithAWriterQueued_readTokensStayBelowTheNextWriter() throws Exception {
        LockClient owner = newClient();
        if (!owner.capabilities().contains(io.dlock.Capability.READ_WRITE)) {
            assertThatThrownBy(() -> owner.readWriteLock("down-loop"))
                    .isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining("READ_WRITE");
            return;
        }
        DistributedReadWriteLock rw = owner.readWriteLock("down-loop");
        Lease write = rw.writeLock().acquire();
        CompletableFuture<Lease> queuedWriter =
                newClient().readWriteLock("down-loop").writeLock().acquireAsync(Duration.ofMinutes(2));
        await().atMost(Timing.scale(Duration.ofSeconds(10)))
                .until(() -> readWriteEntries("down-loop").size() == 2);
        long last = write.fencingToken();
        for (int i = 0; i < 2_000; i++) {
            try (Lease read = rw.readLock().tryAcquire(Duration.ofSeconds(5)).orElseThrow()) {
                assertThat(read.fencingToken()).as("downgraded read %d", i).isGreaterThanOrEqualTo(last);
                last = read.fencingToken();
            }
        }
        assertThat(last).as("the last read's token").isGreaterThan(write.fencingToken());
        write.close();
        try (Lease next = queuedWriter.get(10, TimeUnit.SECONDS)) {
            assertThat(next.fencingToken())
                    .as("the queued writer's token, after reads up to %d", last)
                    .isGreaterThan(last);
        }
    }

    @Test
    default void close_racingSemaphoreAcquire_everyCallerReturns() throws Exception {
        LockClient first = newClient();
        if (!first.capabilities().contains(io.dlock.Capability.SEMAPHORE)) {
            assertThatThrownBy(() -> first.semaphore("close-sem", 2))
                    .isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining("SEMAPHORE");
            return;
        }
        Lease full = first.semaphore("close-sem", 2).acquire(2);
        List<CloseRace.Form> forms = List.of(
                (c, i) -> c.semaphore(i % 2 == 0 ? "close-sem" : "close-sem-free", 2)
                        .acquire(1),
                (c, i) -> c.semaphore(i % 2 == 0 ? "close-sem" : "close-sem-free", 2)
                        .tryAcquire(1, Duration.ofMinutes(1)));
        CloseRace.Result r =
                CloseRace.run(() -> LockClient.connect(uri(shortLease())), forms, 1_000, Duration.ofSeconds(10));
        assertThat(r.trials()).isGreaterThanOrEqualTo(8);
        assertThat(r.closedSeen() + r.acquiredSeen()).isEqualTo(r.trials());
        await().atMost(Timing.scale(crashReleaseBound()))
                .until(() -> semaphoreEntries("close-sem").size() == 1
                        && semaphoreEntries("close-sem-free").isEmpty());
        assertThat(full.isValid()).isTrue();
        full.close();
    }

    @Test
    default void readLock_upgradeToWrite_failsAtOnceAndKeepsRead() throws Exception {
        DistributedReadWriteLock rw = newClient().readWriteLock("up");
        try (Lease read = rw.readLock().acquire()) {
            long start = System.nanoTime();
            assertThatThrownBy(() -> rw.writeLock().acquire())
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("upgrade")
                    .hasMessageContaining("'up'");
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(1000);
            assertThat(read.isValid()).isTrue();
            assertThat(readWriteEntries("up")).hasSize(1);
        }
    }

    // ---- semaphore

    @Test
    default void semaphore_threePermitsTenClients_neverMoreThanThreeHolders() throws Exception {
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger maxInside = new AtomicInteger();
        AtomicInteger grants = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(10);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                DistributedSemaphore semaphore = newClient().semaphore("pool", 3);
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
        assertThat(semaphoreEntries("pool")).isEmpty();
    }

    @Test
    default void semaphore_severalPermitsPerLease_countTowardsTotal() throws Exception {
        DistributedSemaphore sem = newClient().semaphore("multi", 5);
        DistributedSemaphore other = newClient().semaphore("multi", 5);
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
    default void semaphore_waiterForTwoPermits_grantedWhenTwoComeBack() throws Exception {
        DistributedSemaphore semA = newClient().semaphore("pool", 3);
        DistributedSemaphore semB = newClient().semaphore("pool", 3);
        Lease two = semA.acquire(2);
        Lease one = semB.tryAcquire(1, Duration.ZERO).orElseThrow();
        assertThat(semB.tryAcquire(1, Duration.ZERO)).isEmpty();
        CompletableFuture<Lease> waiting = CompletableFuture.supplyAsync(() -> {
            try {
                return semB.tryAcquire(2, Duration.ofSeconds(30)).orElseThrow();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(5)).until(() -> !waiting.isDone());
        two.close();
        Lease got = waiting.get(10, TimeUnit.SECONDS);
        assertThat(got.fencingToken()).isGreaterThan(one.fencingToken());
        got.close();
        one.close();
        assertThat(semaphoreEntries("pool")).isEmpty();
    }

    @Test
    default void semaphore_killedHolder_permitsComeBack() throws Exception {
        DistributedSemaphore sem = newClient().semaphore("crash", 2);
        try (ChildJvm holder =
                ChildJvm.start(LockWorker.class, List.of("permits", uri(shortLease()), "crash", "2", "2"))) {
            holder.awaitLine("HOLDING", Timing.scale(Duration.ofSeconds(30)));
            assertThat(sem.tryAcquire(1, Duration.ZERO)).isEmpty();
            long killedAt = System.nanoTime();
            holder.kill();
            try (Lease back =
                    sem.tryAcquire(2, Timing.scale(Duration.ofSeconds(30))).orElseThrow()) {
                assertThat(back.isValid()).isTrue();
                assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt))
                        .isLessThan(Timing.scale(crashReleaseBound()).toMillis());
            }
        }
    }

    @Test
    default void semaphore_badInput_clearErrorsAndNothingChanged() throws Exception {
        LockClient client = newClient();
        assertThatThrownBy(() -> client.semaphore("s", 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least 1");
        assertThatThrownBy(() -> client.semaphore("s", -2)).isInstanceOf(IllegalArgumentException.class);
        DistributedSemaphore three = client.semaphore("s", 3);
        assertThatThrownBy(() -> three.acquire(4))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("4")
                .hasMessageContaining("3");
        assertThatThrownBy(() -> three.tryAcquire(0, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> three.tryAcquire(1, Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(serverState()).isEmpty();
        try (Lease held = three.acquire(1)) {
            // Every client must agree on the total: a disagreeing one is refused, and changes nothing.
            DistributedSemaphore five = newClient().semaphore("s", 5);
            assertThatThrownBy(() -> five.tryAcquire(1, Duration.ofSeconds(5)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("3 permits")
                    .hasMessageContaining("5");
            assertThat(semaphoreEntries("s")).hasSize(1);
            assertThat(held.isValid()).isTrue();
        }
    }

    @Test
    default void semaphore_acquireAsync_timesOutCleanly_thenGrantedWhenPermitsComeBack() throws Exception {
        DistributedSemaphore holder = newClient().semaphore("async", 3);
        DistributedSemaphore waiter = newClient().semaphore("async", 3);
        Lease two = holder.acquire(2);
        CompletableFuture<Lease> late = waiter.acquireAsync(2, Duration.ofMillis(300));
        assertThatThrownBy(() -> late.get(10, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOf(LockTimeoutException.class)
                .hasMessageContaining("async");
        assertThat(semaphoreEntries("async")).hasSize(1);

        CompletableFuture<Lease> waiting = waiter.acquireAsync(2, Duration.ofSeconds(30));
        await().atMost(Timing.scale(Duration.ofSeconds(5)))
                .until(() -> semaphoreEntries("async").size() == 2);
        await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(5)).until(() -> !waiting.isDone());
        two.close();
        try (Lease got = waiting.get(10, TimeUnit.SECONDS)) {
            assertThat(got.isValid()).isTrue();
            assertThat(got.fencingToken()).isGreaterThan(two.fencingToken());
            assertThat(holder.tryAcquire(2, Duration.ZERO)).isEmpty();
        }
        await().atMost(Timing.scale(Duration.ofSeconds(5)))
                .until(() -> semaphoreEntries("async").isEmpty());
    }

    @Test
    default void semaphore_acquireAsync_cancelled_leavesNoEntry() throws Exception {
        DistributedSemaphore holder = newClient().semaphore("async-cancel", 2);
        DistributedSemaphore waiter = newClient().semaphore("async-cancel", 2);
        try (Lease full = holder.acquire(2)) {
            CompletableFuture<Lease> async = waiter.acquireAsync(1, Duration.ofMinutes(1));
            await().atMost(Timing.scale(Duration.ofSeconds(5)))
                    .until(() -> semaphoreEntries("async-cancel").size() == 2);
            assertThat(async.cancel(true)).isTrue();
            await().atMost(Timing.scale(Duration.ofSeconds(5)))
                    .until(() -> semaphoreEntries("async-cancel").size() == 1);
            assertThat(full.isValid()).isTrue();
        }
        // Cancelled while the permits come back: whichever wins, nothing stays held.
        for (int i = 0; i < 5; i++) {
            Lease full = holder.acquire(2);
            CompletableFuture<Lease> async = waiter.acquireAsync(2, Duration.ofMinutes(1));
            async.cancel(true);
            full.close();
            await().atMost(Timing.scale(Duration.ofSeconds(5)))
                    .until(() -> semaphoreEntries("async-cancel").isEmpty());
        }
        try (Lease all = holder.tryAcquire(2, Duration.ofSeconds(5)).orElseThrow()) {
            assertThat(all.isValid()).isTrue();
        }
    }

    @Test
    default void semaphore_acquireAsync_sixClients_neverMoreThanTwoHolders() throws Exception {
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger maxInside = new AtomicInteger();
        AtomicInteger grants = new AtomicInteger();
        List<CompletableFuture<Void>> chains = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            DistributedSemaphore semaphore = newClient().semaphore("async-pool", 2);
            CompletableFuture<Void> chain = CompletableFuture.completedFuture(null);
            for (int round = 0; round < 5; round++) {
                chain = chain.thenCompose(unused -> semaphore.acquireAsync(1, Duration.ofMinutes(1)))
                        .thenAccept(lease -> {
                            try (lease) {
                                maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                                grants.incrementAndGet();
                                inside.decrementAndGet();
                            }
                        });
            }
            chains.add(chain);
        }
        CompletableFuture.allOf(chains.toArray(CompletableFuture[]::new)).get(2, TimeUnit.MINUTES);
        assertThat(grants).hasValue(30);
        assertThat(maxInside.get()).isBetween(1, 2);
        assertThat(semaphoreEntries("async-pool")).isEmpty();
    }

    @Test
    default void semaphore_acquireAsync_badInput_thrownAndNothingChanged() {
        DistributedSemaphore three = newClient().semaphore("async-bad", 3);
        assertThatThrownBy(() -> three.acquireAsync(0, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("0");
        assertThatThrownBy(() -> three.acquireAsync(4, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("3");
        assertThatThrownBy(() -> three.acquireAsync(1, Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("negative");
        assertThat(semaphoreEntries("async-bad")).isEmpty();
    }

    // ---- multi-lock

    @Test
    default void multiLock_held_excludesEachPart() throws Exception {
        LockClient other = newClient();
        try (Lease both = newClient().multiLock(List.of("m1", "m2")).acquire()) {
            assertThat(both.lockName()).isEqualTo("m1,m2");
            assertThat(other.lock("m1").tryAcquire(Duration.ZERO)).isEmpty();
            assertThat(other.lock("m2").tryAcquire(Duration.ZERO)).isEmpty();
            assertThat(entries("m1")).hasSize(1);
            assertThat(entries("m2")).hasSize(1);
        }
        assertThat(entries("m1")).isEmpty();
        assertThat(entries("m2")).isEmpty();
    }

    @Test
    default void multiLock_oppositeOrders_noDeadlockInThousandRounds() throws Exception {
        DistributedLock ab = newClient().multiLock(List.of("a", "b"));
        DistributedLock ba = newClient().multiLock(List.of("b", "a"));
        MutualExclusionChecker checker = new MutualExclusionChecker();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t1 = multiLockWorker(ab, "ab", checker, failure);
        Thread t2 = multiLockWorker(ba, "ba", checker, failure);
        t1.join(TimeUnit.MINUTES.toMillis(3));
        t2.join(TimeUnit.MINUTES.toMillis(3));
        assertThat(failure.get()).isNull();
        assertThat(t1.isAlive() || t2.isAlive()).as("deadlocked").isFalse();
        assertThat(checker.counter()).isEqualTo(1000);
        assertThat(checker.violations()).isZero();
    }

    private static Thread multiLockWorker(
            DistributedLock lock, String who, MutualExclusionChecker checker, AtomicReference<Throwable> failure) {
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
    default void multiLock_partTimesOut_releasesPartsAlreadyHeld() throws Exception {
        LockClient holder = newClient();
        LockClient other = newClient();
        try (Lease b = holder.lock("b").acquire()) {
            assertThat(other.multiLock(List.of("a", "b")).tryAcquire(Duration.ofMillis(300)))
                    .isEmpty();
            assertThat(entries("a")).isEmpty(); // "a" was taken first and given back
            assertThat(entries("b")).hasSize(1);
            CompletableFuture<Lease> async = other.multiLock(List.of("a", "b")).acquireAsync(Duration.ofMillis(300));
            assertThatThrownBy(() -> async.get(10, TimeUnit.SECONDS)).hasCauseInstanceOf(LockTimeoutException.class);
            await().atMost(Duration.ofSeconds(5)).until(() -> entries("a").isEmpty());
        }
        try (Lease both = other.multiLock(List.of("b", "a")).acquire()) {
            assertThat(both.lockName()).isEqualTo("a,b");
            assertThat(holder.lock("a").tryAcquire(Duration.ZERO)).isEmpty();
            assertThat(holder.lock("b").tryAcquire(Duration.ZERO)).isEmpty();
        }
    }

    @Test
    default void multiLock_partLost_leaseInvalidAndOnLostOnce() throws Exception {
        Lease both = client(shortLease()).multiLock(List.of("x", "y")).acquire();
        AtomicInteger lost = new AtomicInteger();
        both.onLost(e -> lost.incrementAndGet());
        dropHolder("x");
        await().atMost(Timing.scale(Duration.ofSeconds(15))).until(() -> !both.isValid());
        await().atMost(Duration.ofSeconds(5)).until(() -> lost.get() == 1);
        both.close();
        assertThat(lost).hasValue(1);
        assertThat(entries("y")).isEmpty(); // the part still held was given back
    }

    @Test
    default void multiLock_badInput_clearErrors() {
        LockClient client = newClient();
        assertThatThrownBy(() -> client.multiLock(List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least one");
        assertThatThrownBy(() -> client.multiLock(List.of("a", "b", "a")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'a' appears twice");
        assertThatThrownBy(() -> client.multiLock(List.of("a", "../b"))).isInstanceOf(IllegalArgumentException.class);
        assertThat(serverState()).isEmpty();
    }

    // ---- non-reentrant mutex

    @Test
    default void nonReentrant_sameThreadWaits_andAnotherThreadMayRelease() throws Exception {
        DistributedLock mutex =
                client(LockFixture.options(patient(), "reentrant=false")).lock("mutex");
        Lease lease = mutex.acquire();
        assertThat(mutex.tryAcquire(Duration.ofMillis(300))).as("no re-entry").isEmpty();
        assertThat(entries("mutex")).hasSize(1);
        Thread releaser = new Thread(lease::close);
        releaser.start();
        releaser.join(10_000);
        assertThat(lease.isValid()).isFalse();
        try (Lease again = mutex.tryAcquire(Duration.ofSeconds(5)).orElseThrow()) {
            assertThat(again.fencingToken()).isGreaterThan(lease.fencingToken());
        }
        assertThat(entries("mutex")).isEmpty();
    }
}
