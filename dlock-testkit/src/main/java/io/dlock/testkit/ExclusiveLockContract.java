package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import java.util.function.BiConsumer;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What every backend's exclusive lock must do, through the public API against a real server: a
 * JUnit 5 test interface. A backend's IT implements it on top of its {@link LockFixture};
 * backend-specific behaviour (how wake-ups are counted, sessions versus leases, server restarts)
 * stays in the backend's own tests.
 */
public interface ExclusiveLockContract extends LockFixture {

    @Test
    default void acquire_twoClientsEightThreads_counterExactAndTokensFenced() throws Exception {
        int threads = 8;
        int perThread = 250; // 2,000 increments in total
        Contention.Result r = Contention.run(
                new LockClient[] {newClient(), newClient()}, "counter", threads, perThread, Duration.ofMinutes(3));
        MutualExclusionChecker checker = r.checker();
        assertThat(checker.counter()).isEqualTo(threads * perThread);
        assertThat(checker.violations()).isZero();
        assertThat(checker.maxConcurrent()).isEqualTo(1);
        assertThat(r.store().rejectedWrites()).isZero();
        assertThat(r.store().acceptedWrites()).isEqualTo(threads * perThread);
        assertThat(entries("counter")).isEmpty();
    }

    @Test
    default void acquire_manyThreadsOneClient_noHandOffLost() throws Exception {
        DistributedLock lock = newClient().lock("local");
        MutualExclusionChecker checker = new MutualExclusionChecker();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            String who = "t" + t;
            Thread thread = new Thread(() -> {
                try {
                    start.await();
                    for (int i = 0; i < 50; i++) {
                        try (Lease lease = lock.acquire()) {
                            checker.enter(who);
                            checker.incrementUnsafely();
                            checker.exit(who);
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            thread.start();
            threads.add(thread);
        }
        start.countDown();
        for (Thread t : threads) {
            t.join(Timing.scale(Duration.ofSeconds(60)).toMillis());
        }
        assertThat(checker.counter()).isEqualTo(200);
        assertThat(checker.violations()).isZero();
    }

    @Test
    default void acquire_threeJvms_counterExactAndTokensIncrease(@TempDir Path dir) throws Exception {
        Path counter = dir.resolve("counter");
        Files.writeString(counter, "0");
        int iterations = 60;
        List<ChildJvm> jvms = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                jvms.add(ChildJvm.start(
                        LockWorker.class,
                        List.of("count", uri(patient()), "shared", counter.toString(), "" + iterations)));
            }
            for (ChildJvm jvm : jvms) {
                jvm.awaitLine("DONE", Timing.scale(Duration.ofSeconds(90)));
                assertThat(jvm.waitFor(Timing.scale(Duration.ofSeconds(20)))).isZero();
            }
        } finally {
            jvms.forEach(ChildJvm::close);
        }
        assertThat(Files.readString(counter).trim()).isEqualTo(Integer.toString(3 * iterations));
        List<Long> tokens = Files.readAllLines(Path.of(counter + ".tokens")).stream()
                .map(Long::parseLong)
                .toList();
        assertThat(tokens).hasSize(3 * iterations);
        for (int i = 1; i < tokens.size(); i++) {
            assertThat(tokens.get(i)).as("token %d after %d", i, i - 1).isGreaterThan(tokens.get(i - 1));
        }
    }

    @Test
    default void acquire_threeDeep_releasedOnlyByOutermostClose() throws Exception {
        LockClient owner = newClient();
        LockClient other = newClient();
        DistributedLock lock = owner.lock("reentrant");
        Lease outer = lock.acquire();
        Lease middle = lock.acquire();
        Lease inner = lock.tryAcquire(Duration.ZERO).orElseThrow();
        assertThat(List.of(middle.fencingToken(), inner.fencingToken())).containsOnly(outer.fencingToken());
        assertThat(entries("reentrant")).hasSize(1); // re-entry made no server round trip
        inner.close();
        middle.close();
        assertThat(lock.isHeldByCurrentThread()).isTrue();
        assertThat(inner.isValid()).isFalse();
        assertThat(outer.isValid()).isTrue();
        assertThat(other.lock("reentrant").tryAcquire(Duration.ZERO)).isEmpty();
        outer.close();
        assertThat(lock.isHeldByCurrentThread()).isFalse();
        try (Lease next = other.lock("reentrant").tryAcquire(Duration.ZERO).orElseThrow()) {
            assertThat(next.fencingToken()).isGreaterThan(outer.fencingToken());
        }
    }

    @Test
    default void acquire_waiters_grantedInArrivalOrder() throws Exception {
        LockClient holderClient = newClient();
        LockClient waiterClient =
                client(LockFixture.options(patient(), "localQueueing=false")); // each waiter on the server
        Lease held = holderClient.lock("fifo").acquire();
        List<Integer> order = new CopyOnWriteArrayList<>();
        List<Thread> waiters = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            int id = i;
            Thread t = new Thread(() -> {
                try (Lease lease = waiterClient.lock("fifo").acquire()) {
                    order.add(id);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            t.start();
            waiters.add(t);
            int expected = i + 2;
            await().atMost(Timing.scale(Duration.ofSeconds(10)))
                    .until(() -> entries("fifo").size() == expected);
        }
        held.close();
        for (Thread t : waiters) {
            t.join(Timing.scale(Duration.ofSeconds(20)).toMillis());
        }
        assertThat(order).containsExactly(0, 1, 2, 3, 4, 5);
    }

    @Test
    default void tryAcquire_zeroWaitWhileHeld_returnsEmptyAtOnceAndLeavesNoEntry() throws Exception {
        LockClient holder = newClient();
        LockClient other = newClient();
        try (Lease held = holder.lock("busy").acquire()) {
            long start = System.nanoTime();
            Optional<Lease> attempt = other.lock("busy").tryAcquire(Duration.ZERO);
            long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertThat(attempt).isEmpty();
            assertThat(elapsedMs)
                    .as("one attempt, no waiting")
                    .isLessThan(Timing.scale(Duration.ofSeconds(2)).toMillis());
            assertThat(entries("busy")).hasSize(1);
            assertThat(held.isValid()).isTrue();
        }
    }

    /**
     * Busy is not an outage: eight threads of one client (local queueing on, its default) make
     * zero-wait attempts, {@code tryAcquire} and {@code acquireAsync} in turn, on one lock while two
     * threads of a second client (each on the server) take it and hold it briefly. On a healthy
     * server every attempt is a grant, an empty {@code Optional} or a {@link LockTimeoutException};
     * a {@link io.dlock.LockBackendException} (or anything else) fails the test, and so does an
     * overlap. Bounded: at most 150 attempts per thread and about three seconds.
     */
    @Test
    default void acquireZeroWait_manyThreadsOfOneClientOnAContendedLock_busyIsNeverABackendFailure() throws Exception {
        LockClient mine = newClient();
        LockClient other = client(LockFixture.options(patient(), "localQueueing=false"));
        MutualExclusionChecker checker = new MutualExclusionChecker();
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        AtomicInteger granted = new AtomicInteger();
        AtomicInteger busy = new AtomicInteger();
        AtomicBoolean stop = new AtomicBoolean();
        long end = System.nanoTime() + Timing.scale(Duration.ofSeconds(3)).toNanos();
        BiConsumer<String, Lease> hold = (who, lease) -> {
            try (lease) {
                checker.enter(who);
                checker.incrementUnsafely();
                Thread.yield(); // briefly, so that the others find it busy
                checker.exit(who);
                granted.incrementAndGet();
            }
        };
        ExecutorService pool = Executors.newFixedThreadPool(10);
        try {
            List<Future<?>> contenders = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                String who = "other-" + t;
                contenders.add(pool.submit(() -> {
                    while (!stop.get()) {
                        try {
                            other.lock("zero-wait")
                                    .tryAcquire(Duration.ofMillis(5))
                                    .ifPresent(l -> hold.accept(who, l));
                        } catch (RuntimeException e) {
                            failures.add(e);
                        }
                    }
                    return null;
                }));
            }
            List<Future<?>> attempts = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                String who = "mine-" + t;
                attempts.add(pool.submit(() -> {
                    for (int i = 0; i < 150 && System.nanoTime() - end < 0; i++) {
                        try {
                            Optional<Lease> got;
                            if (i % 2 == 0) {
                                got = mine.lock("zero-wait").tryAcquire(Duration.ZERO);
                            } else {
                                try {
                                    got = Optional.of(mine.lock("zero-wait")
                                            .acquireAsync(Duration.ZERO)
                                            .get(30, TimeUnit.SECONDS));
                                } catch (ExecutionException e) {
                                    if (!(e.getCause() instanceof LockTimeoutException)) {
                                        throw e.getCause();
                                    }
                                    got = Optional.empty();
                                }
                            }
                            if (got.isPresent()) {
                                hold.accept(who, got.get());
                            } else {
                                busy.incrementAndGet();
                            }
                        } catch (Throwable e) {
                            failures.add(e);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : attempts) {
                f.get(Timing.scale(Duration.ofSeconds(60)).toMillis(), TimeUnit.MILLISECONDS);
            }
            stop.set(true);
            for (Future<?> f : contenders) {
                f.get(Timing.scale(Duration.ofSeconds(30)).toMillis(), TimeUnit.MILLISECONDS);
            }
        } finally {
            stop.set(true);
            pool.shutdownNow();
        }
        assertThat(failures)
                .as("a busy lock on a healthy server is busy, never a backend failure")
                .isEmpty();
        assertThat(checker.violations()).as("%s", checker.firstViolation()).isZero();
        assertThat(checker.counter()).isEqualTo(granted.get());
        assertThat(busy.get()).as("the lock was contended").isPositive();
        await().atMost(Timing.scale(Duration.ofSeconds(10)))
                .until(() -> entries("zero-wait").isEmpty());
    }

    @Test
    default void tryAcquire_timedOut_leavesNoEntry() throws Exception {
        LockClient holder = newClient();
        LockClient other = newClient();
        try (Lease held = holder.lock("timeout").acquire()) {
            assertThat(other.lock("timeout").tryAcquire(Duration.ofMillis(300))).isEmpty();
            assertThat(entries("timeout")).hasSize(1);
            CompletableFuture<Lease> async = other.lock("timeout").acquireAsync(Duration.ofMillis(300));
            assertThatThrownBy(() -> async.get(10, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOf(LockTimeoutException.class)
                    .hasMessageContaining("lock 'timeout' on " + backendName());
            assertThat(entries("timeout")).hasSize(1);
        }
        assertThat(entries("timeout")).isEmpty();
    }

    @Test
    default void acquireAsync_cancelled_leavesNoEntry() throws Exception {
        LockClient holder = newClient();
        LockClient other = newClient();
        try (Lease held = holder.lock("cancel").acquire()) {
            CompletableFuture<Lease> async = other.lock("cancel").acquireAsync(Duration.ofMinutes(1));
            await().until(() -> entries("cancel").size() == 2);
            assertThat(async.cancel(true)).isTrue();
            await().atMost(Timing.scale(Duration.ofSeconds(5)))
                    .until(() -> entries("cancel").size() == 1);
        }
        try (Lease lease = other.lock("cancel").acquireAsync(Duration.ZERO).get(10, TimeUnit.SECONDS)) {
            assertThat(lease.isValid()).isTrue();
            assertThat(entries("cancel")).hasSize(1);
        }
    }

    @Test
    default void acquireAsync_cancelledRightAway_whileTheHolderReleases_leavesNothingBehind() throws Exception {
        LockClient holder = newClient();
        LockClient waiter = newClient();
        LockClient probe = newClient();
        for (int i = 0; i < 10; i++) {
            Lease held = holder.lock("cancel-race").acquire();
            // Cancelled while its first attempt may still be in flight: the withdrawal must wait for
            // it, or the row or grant that attempt makes stays until its lease runs out.
            CompletableFuture<Lease> async = waiter.lock("cancel-race").acquireAsync(Duration.ofMinutes(1));
            async.cancel(true);
            held.close();
            await().atMost(Timing.scale(Duration.ofSeconds(5))).until(() -> probe.lock("cancel-race")
                    .tryAcquire(Duration.ZERO)
                    .map(lease -> {
                        lease.close();
                        return lease;
                    })
                    .isPresent());
        }
        await().atMost(Timing.scale(Duration.ofSeconds(5)))
                .until(() -> entries("cancel-race").isEmpty());
    }

    @Test
    default void acquireAsync_parkedWaiterCancelledAsTheHolderReleases_leavesNothingBehind() throws Exception {
        LockClient holder = newClient();
        LockClient waiter = newClient();
        LockClient probe = newClient();
        int granted = 0;
        for (int round = 0; round < 30; round++) {
            Lease held = holder.lock("parked-race").acquire();
            CompletableFuture<Lease> async = waiter.lock("parked-race").acquireAsync(Duration.ofMinutes(1));
            await().atMost(Timing.scale(Duration.ofSeconds(5)))
                    .until(() -> entries("parked-race").size() == 2);
            // The cancel from half a millisecond before the release is sent to five after it, around
            // the moment the hand-over reaches the parked waiter.
            long skewMicros = ThreadLocalRandom.current().nextLong(-500, 5000);
            boolean asyncForms = round % 2 == 1; // as a reactive adapter does: cancel(false), closeAsync
            CompletableFuture<Boolean> cancel = CompletableFuture.supplyAsync(() -> {
                spinMicros(skewMicros);
                return async.cancel(!asyncForms);
            });
            spinMicros(-skewMicros);
            if (asyncForms) {
                var unused = held.closeAsync();
            } else {
                held.close();
            }
            if (!cancel.get(10, TimeUnit.SECONDS)) {
                granted++;
                async.get(10, TimeUnit.SECONDS).close(); // the grant won the race: the caller's to close
            }
            int r = round;
            // A hand-over that raced the withdrawal must be given back at once, not left to its lease.
            await().atMost(Timing.scale(Duration.ofSeconds(5)))
                    .alias("round " + r + " (skew " + skewMicros + " us): entries gone")
                    .until(() -> entries("parked-race").isEmpty());
        }
        Optional<Lease> after = probe.lock("parked-race").tryAcquire(Duration.ZERO);
        assertThat(after).isPresent();
        after.get().close();
        System.out.printf("%s: parked cancel race, %d of 30 rounds granted first%n", backendName(), granted);
    }

    private static void spinMicros(long micros) {
        long end = System.nanoTime() + micros * 1000;
        while (System.nanoTime() < end) {
            Thread.onSpinWait();
        }
    }

    @Test
    default void acquire_interrupted_throwsAndLeavesNoEntry() throws Exception {
        LockClient holder = newClient();
        LockClient other = newClient();
        try (Lease held = holder.lock("interrupt").acquire()) {
            AtomicReference<Throwable> thrown = new AtomicReference<>();
            Thread waiter = new Thread(() -> {
                try {
                    other.lock("interrupt").acquire();
                } catch (Throwable t) {
                    thrown.set(t);
                }
            });
            waiter.start();
            await().until(() -> entries("interrupt").size() == 2);
            waiter.interrupt();
            waiter.join(Timing.scale(Duration.ofSeconds(10)).toMillis());
            assertThat(thrown.get()).isInstanceOf(InterruptedException.class);
            assertThat(entries("interrupt")).hasSize(1);
        }
    }

    @Test
    default void close_byNonOwnerThread_throwsAndLockStaysHeld() throws Exception {
        LockClient owner = newClient();
        LockClient other = newClient();
        Lease lease = owner.lock("owned").acquire();
        assertThat(thrownOnAnotherThread(lease::close))
                .isInstanceOf(IllegalMonitorStateException.class)
                .hasMessageContaining("owned");
        assertThat(thrownOnAnotherThread(() -> owner.lock("owned").asJavaLock().unlock()))
                .isInstanceOf(IllegalMonitorStateException.class);
        assertThat(lease.isValid()).isTrue();
        assertThat(other.lock("owned").tryAcquire(Duration.ZERO)).isEmpty();
        lease.close();
        assertThat(other.lock("owned").tryAcquire(Duration.ZERO)).isPresent();
    }

    @Test
    default void closeAsync_invalidAtOnce_releasedOnceItsStageCompletes() throws Exception {
        LockClient owner = newClient();
        LockClient other = newClient();
        DistributedLock lock = owner.lock("close-async");
        Lease outer = lock.acquire();
        Lease inner = lock.acquire();
        assertThat(inner.closeAsync().toCompletableFuture())
                .as("a nested lease only drops a hold")
                .isCompletedWithValue(null);
        assertThat(thrownOnAnotherThread(outer::closeAsync)).isInstanceOf(IllegalMonitorStateException.class);
        assertThat(outer.isValid()).isTrue();
        assertThat(other.lock("close-async").tryAcquire(Duration.ZERO)).isEmpty();

        CompletableFuture<Void> released = outer.closeAsync().toCompletableFuture();

        assertThat(outer.isValid()).isFalse();
        assertThat(lock.isHeldByCurrentThread()).isFalse();
        released.get(30, TimeUnit.SECONDS);
        assertThat(entries("close-async")).isEmpty();
        try (Lease next = other.lock("close-async").tryAcquire(Duration.ZERO).orElseThrow()) {
            assertThat(next.fencingToken()).isGreaterThan(outer.fencingToken());
        }
        assertThat(outer.closeAsync().toCompletableFuture()).isCompletedWithValue(null);
    }

    @Test
    default void close_client_releasesEveryLease() throws Exception {
        LockClient first = LockClient.connect(uri(patient()));
        LockClient second = newClient();
        Lease a = first.lock("a").acquire();
        Lease b = first.lock("b").acquire();
        AtomicInteger lost = new AtomicInteger();
        a.onLost(e -> lost.incrementAndGet());
        first.close();
        assertThat(a.isValid()).isFalse();
        assertThat(b.isValid()).isFalse();
        assertThat(second.lock("a").tryAcquire(Duration.ZERO)).isPresent();
        assertThat(second.lock("b").tryAcquire(Duration.ZERO)).isPresent();
        assertThat(lost).hasValue(0);
        assertThatThrownBy(() -> first.lock("a"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("CLOSED");
    }

    @Test
    default void close_racingEveryAcquireForm_everyCallerReturns() throws Exception {
        LockClient holder = newClient();
        Lease busy = holder.lock("close-busy").acquire();
        // Even trials wait behind the holder, odd ones find the lock free.
        java.util.function.IntFunction<String> name = i -> i % 2 == 0 ? "close-busy" : "close-free";
        List<CloseRace.Form> forms = new ArrayList<>(List.of(
                (c, i) -> c.lock(name.apply(i)).acquire(),
                (c, i) -> c.lock(name.apply(i)).tryAcquire(Duration.ofMinutes(1)),
                (c, i) -> c.lock(name.apply(i)).acquireAsync(Duration.ofMinutes(1)),
                (c, i) -> {
                    Lock l = c.lock(name.apply(i)).asJavaLock();
                    l.lock();
                    return l;
                }));
        if (holder.capabilities().contains(io.dlock.Capability.MULTI_LOCK)) {
            forms.add(
                    (c, i) -> c.multiLock(List.of(name.apply(i), "close-other")).acquire());
        }
        CloseRace.Result r =
                CloseRace.run(() -> LockClient.connect(uri(shortLease())), forms, 1_000, Duration.ofSeconds(15));
        assertThat(r.trials()).isGreaterThanOrEqualTo(forms.size() * 4);
        assertThat(r.closedSeen() + r.acquiredSeen()).isEqualTo(r.trials());
        // Nothing of the closed clients stays: the holder's entry alone, and it is still valid.
        await().atMost(Timing.scale(crashReleaseBound()))
                .until(() -> entries("close-busy").size() == 1
                        && entries("close-free").isEmpty()
                        && entries("close-other").isEmpty());
        assertThat(busy.isValid()).isTrue();
        busy.close();
    }

    @Test
    default void holderKilled_nextWaiterAcquiresWithinItsLease() throws Exception {
        LockClient waiter = newClient();
        try (ChildJvm holder = ChildJvm.start(LockWorker.class, List.of("hold", uri(shortLease()), "crash"))) {
            long holderToken = Long.parseLong(holder.awaitLine("HOLDING", Timing.scale(Duration.ofSeconds(30)))
                    .split(" ")[1]);
            CompletableFuture<Lease> next = waiter.lock("crash").acquireAsync(Duration.ofMinutes(1));
            await().until(() -> entries("crash").size() == 2);
            long killedAt = System.nanoTime();
            holder.kill();
            Lease lease = next.get(30, TimeUnit.SECONDS);
            long passedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
            assertThat(lease.fencingToken()).isGreaterThan(holderToken);
            assertThat(passedMs).isLessThan(Timing.scale(crashReleaseBound()).toMillis());
            lease.close();
        }
    }

    @Test
    default void asJavaLock_behavesAsLock() throws Exception {
        LockClient client = newClient();
        LockClient other = newClient();
        Lock lock = client.lock("jlock").asJavaLock();
        lock.lock();
        lock.lock();
        assertThat(lock.tryLock()).isTrue();
        lock.unlock();
        lock.unlock();
        assertThat(other.lock("jlock").tryAcquire(Duration.ZERO)).isEmpty();
        lock.unlock();
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalMonitorStateException.class);
        assertThat(lock.tryLock(1, TimeUnit.SECONDS)).isTrue();
        lock.unlock();
        lock.lockInterruptibly();
        lock.unlock();
        assertThatThrownBy(lock::newCondition).isInstanceOf(UnsupportedOperationException.class);
        Thread.currentThread().interrupt();
        assertThatThrownBy(lock::lockInterruptibly).isInstanceOf(InterruptedException.class);
        assertThat(Thread.interrupted()).isFalse();
        assertThat(entries("jlock")).isEmpty();
    }

    @Test
    default void withLock_runsActionOrTimesOut() throws Exception {
        LockClient client = newClient();
        LockClient other = newClient();
        assertThat(client.withLock(
                        "job", Duration.ofSeconds(5), () -> entries("job").size()))
                .isEqualTo(1);
        AtomicInteger ran = new AtomicInteger();
        try (Lease held = other.lock("job").acquire()) {
            assertThatThrownBy(() -> client.withLock("job", Duration.ofMillis(100), ran::incrementAndGet))
                    .isInstanceOf(LockTimeoutException.class)
                    .hasMessageContaining("lock 'job' on " + backendName());
        }
        assertThat(ran).hasValue(0);
        assertThatThrownBy(() -> client.withLock("job", Duration.ofSeconds(5), () -> {
                    throw new IllegalStateException("boom");
                }))
                .hasMessage("boom");
        assertThat(other.lock("job").tryAcquire(Duration.ZERO)).isPresent();
    }

    @Test
    default void fencingTokens_increaseAcrossClientsWhileTheLockGoesIdle() throws Exception {
        List<Long> tokens = new ArrayList<>();
        LockClient[] clients = {newClient(), newClient(), newClient()};
        for (int i = 0; i < 9; i++) {
            try (Lease lease = clients[i % 3].lock("fence").acquire()) {
                tokens.add(lease.fencingToken());
            }
            // Between grants nothing is left of the lock on the server: tokens must still increase.
            assertThat(entries("fence")).isEmpty();
        }
        assertThat(tokens).isSorted().doesNotHaveDuplicates();
        assertThat(tokens.get(0)).isPositive();
    }

    /** What {@code action} threw on a thread of its own (not the lease's owner), or null. */
    private static @Nullable Throwable thrownOnAnotherThread(Runnable action) throws InterruptedException {
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread other = new Thread(() -> {
            try {
                action.run();
            } catch (Throwable t) {
                thrown.set(t);
            }
        });
        other.start();
        other.join();
        return thrown.get();
    }
}
