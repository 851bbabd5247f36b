package io.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockInterruptedException;
import io.dlock.LockLostException;
import io.dlock.LockOptions;
import io.dlock.LockTimeoutException;
import io.dlock.RetryPolicy;
import io.dlock.Ticker;
import io.dlock.spi.LockMode;
import io.dlock.spi.QueueEntry;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Regression tests for the engine defects of issue 19, over {@link InMemoryBackend}. Each test
 * names its item; the backends' halves of the issue are in their modules and in the testkit's
 * contracts.
 */
class Issue19Test {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final Ticker ticker = now::get;
    private final List<LockClient> clients = new CopyOnWriteArrayList<>();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private InMemoryBackend.Server server;

    @BeforeEach
    void setUp() {
        server = new InMemoryBackend.Server();
    }

    @AfterEach
    void tearDown() {
        threads.shutdownNow();
        clients.forEach(LockClient::close);
    }

    private LockClient open(InMemoryBackend backend, LockOptions.Builder options) {
        LockClient c = LockEngine.newClient(backend, options.ticker(ticker).build());
        clients.add(c);
        return c;
    }

    private static final java.util.Set<io.dlock.Capability> WITH_MULTI_LOCK = java.util.Set.copyOf(java.util.EnumSet.of(
            io.dlock.Capability.MULTI_LOCK, InMemoryBackend.DEFAULT_CAPABILITIES.toArray(new io.dlock.Capability[0])));

    private LockClient open() {
        return open(server.connect(WITH_MULTI_LOCK), LockOptions.builder().callbackThreads(1));
    }

    private static ConditionFactory eventually() {
        return await().atMost(Duration.ofSeconds(5)).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(5));
    }

    private static Acquisition heldByMe(LockClient client, String name) {
        return ((EngineClient) client).heldBy(name, LockMode.EXCLUSIVE, Thread.currentThread());
    }

    // ---- item 3: close() racing every acquire form answers every caller

    @Test
    void close_racingEveryAcquireForm_everyCallerReturns() throws Exception {
        LockClient holder = open();
        Lease held = holder.lock("busy").acquire();
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        int trials = 0;
        int closedSeen = 0;
        while (trials < 2_000 && System.nanoTime() < end) {
            int form = trials % 6;
            String name = trials % 2 == 0 ? "busy" : "free-" + trials; // waiting or granted at once
            String other = "other-" + trials;
            LockClient c = LockEngine.newClient(
                    server.connect(WITH_MULTI_LOCK),
                    LockOptions.builder().callbackThreads(1).build());
            CyclicBarrier start = new CyclicBarrier(2);
            Future<Object> call = threads.submit(() -> {
                start.await();
                try {
                    return switch (form) {
                        case 0 -> c.lock(name).acquire();
                        case 1 -> c.lock(name).tryAcquire(Duration.ofMinutes(1));
                        case 2 -> c.lock(name)
                                .acquireAsync(Duration.ofMinutes(1))
                                .get();
                        case 3 -> c.multiLock(List.of(name, other)).acquire();
                        case 4 -> c.multiLock(List.of(name, other))
                                .acquireAsync(Duration.ofMinutes(1))
                                .get();
                        default -> {
                            Lock l = c.lock(name).asJavaLock();
                            l.lock();
                            yield l;
                        }
                    };
                } catch (IllegalStateException | ExecutionException e) {
                    return e;
                }
            });
            start.await();
            c.close();
            Object outcome;
            try {
                outcome = call.get(5, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                throw new AssertionError(
                        "trial " + trials + " (form " + form + ", " + name
                                + "): the caller was still blocked 5 s after close() returned",
                        e);
            }
            if (outcome instanceof ExecutionException ee) {
                assertThat(ee.getCause()).as("trial %d", trials).isInstanceOf(IllegalStateException.class);
                outcome = ee.getCause();
            }
            if (outcome instanceof IllegalStateException ise) {
                assertThat(ise.getMessage()).as("trial %d", trials).containsIgnoringCase("close");
                closedSeen++;
            }
            trials++;
        }
        assertThat(trials).isGreaterThanOrEqualTo(200);
        assertThat(closedSeen)
                .as("trials whose caller was told the client closed")
                .isPositive();
        // Nothing of the closed clients is left on the server: only the holder's entry.
        eventually().until(() -> server.totalEntries() == 1);
        assertThat(held.isValid()).isTrue();
    }

    @Test
    void cancel_ofAnAcquisitionNotYetStarted_completesItsOutcome() {
        LockClient c = open();
        Acquisition a = ((EngineClient) c).newAcquisition("x", LockMode.EXCLUSIVE, 1, 1, null, false, null);
        a.cancel(new IllegalStateException("inmemory client closed"));
        assertThat(a.outcome()).isCompletedExceptionally();
        a.start(); // the caller's start after the cancel sends nothing
        assertThat(server.totalEntries()).isZero();
    }

    // ---- item 4: unlock() of a multi-lock with a lost part releases the other parts

    @Test
    void multiLockUnlock_afterOnePartWasLost_releasesEveryPart() throws Exception {
        LockClient c = open();
        Lock multi = c.multiLock(List.of("a", "b")).asJavaLock();
        multi.lock();
        heldByMe(c, "a").lose(LockMetrics.LossCause.REMOVED, "lost for the test", null);

        multi.unlock();

        LockClient other = open();
        assertThat(other.lock("b").tryAcquire(Duration.ZERO)).as("b released").isPresent();
        assertThat(other.lock("a").tryAcquire(Duration.ofSeconds(5)))
                .as("a's entry cleaned up")
                .isPresent();
        assertThatThrownBy(multi::unlock).isInstanceOf(IllegalMonitorStateException.class);
    }

    // ---- item 5: a future given up by its caller abandons the attempt

    @Test
    void multiLockAcquireAsync_givenUpWithOrTimeout_releasesThePartsItHolds() throws Exception {
        LockClient holder = open();
        Lease b = holder.lock("b").acquire();
        LockClient c = open();
        CompletableFuture<Lease> f = c.multiLock(List.of("a", "b"))
                .acquireAsync(Duration.ofMinutes(1))
                .orTimeout(200, TimeUnit.MILLISECONDS);
        assertThatThrownBy(() -> f.get(5, TimeUnit.SECONDS)).hasCauseInstanceOf(TimeoutException.class);

        LockClient other = open();
        assertThat(other.lock("a").tryAcquire(Duration.ofSeconds(2)))
                .as("part a given back")
                .isPresent();
        eventually().until(() -> server.queue("b").size() == 1); // only the holder's entry
        b.close();
    }

    @Test
    void acquireAsync_completedExceptionallyByTheCaller_withdrawsTheQueueEntry() {
        LockClient holder = open();
        LockClient c = open();
        holder.lock("x").acquireAsync(Duration.ZERO).join();
        CompletableFuture<Lease> f = c.lock("x").acquireAsync(Duration.ofMinutes(1));
        eventually().until(() -> server.queue("x").size() == 2);

        f.completeExceptionally(new RuntimeException("caller gave up"));

        eventually().until(() -> server.queue("x").size() == 1);
    }

    @Test
    void acquireAsync_completedNormallyByTheCaller_releasesALateGrant() throws Exception {
        LockClient holder = open();
        Lease held = holder.lock("x").acquire();
        LockClient c = open();
        CompletableFuture<Lease> f = c.lock("x").acquireAsync(Duration.ofMinutes(1));
        eventually().until(() -> server.queue("x").size() == 2);

        f.complete(null);
        held.close();

        eventually().until(() -> server.queue("x").isEmpty());
    }

    // ---- item 6: onLost listeners are not held up by users' continuations

    @Test
    void onLost_whileUsersContinuationsBlockTheCallbackPool_runsPromptly() throws Exception {
        LockClient c = open(server.connect(), LockOptions.builder().callbackThreads(1));
        Lease lease = c.lock("x").acquire();
        CountDownLatch busy = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        c.lock("y")
                .acquireAsync(Duration.ZERO)
                .thenAccept(
                        l -> { // a user's slow critical section
                            busy.countDown();
                            try {
                                release.await(10, TimeUnit.SECONDS);
                            } catch (InterruptedException e) {
                                Thread.currentThread().interrupt();
                            }
                        });
        assertThat(busy.await(5, TimeUnit.SECONDS))
                .as("the only callback thread is busy")
                .isTrue();
        CountDownLatch ran = new CountDownLatch(1);
        lease.onLost(e -> ran.countDown());
        try {
            ((EngineLease) lease).acquisition().lose(LockMetrics.LossCause.REMOVED, "lost for the test", null);
            assertThat(ran.await(2, TimeUnit.SECONDS))
                    .as("listener ran while the callback pool was busy")
                    .isTrue();
        } finally {
            release.countDown();
        }
    }

    // ---- item 9: a listener that throws an Error does not skip the others

    @Test
    void onLost_aListenerThrowsAnError_theOthersStillRunAndTheThreadSurvives() throws Exception {
        LockClient c = open();
        Lease first = c.lock("x").acquire();
        Lease second = c.lock("y").acquire();
        List<String> ran = new CopyOnWriteArrayList<>();
        first.onLost(e -> {
            ran.add("first-1");
            throw new AssertionError("a test's assertion in a listener");
        });
        first.onLost(e -> ran.add("first-2"));
        second.onLost(e -> {
            ran.add("second");
            throw new NoClassDefFoundError("missing");
        });
        second.onLost(e -> ran.add("second-2"));

        ((EngineLease) first).acquisition().lose(LockMetrics.LossCause.REMOVED, "lost for the test", null);
        ((EngineLease) second).acquisition().lose(LockMetrics.LossCause.REMOVED, "lost for the test", null);

        eventually().until(() -> ran.size() == 4);
        assertThat(ran).containsExactly("first-1", "first-2", "second", "second-2");
    }

    // ---- item 11: Lock.tryLock() is not interruptible; lock() keeps its place

    @Test
    void tryLock_withTheInterruptFlagSet_takesAFreeLockAndKeepsTheFlag() {
        LockClient c = open();
        Lock lock = c.lock("x").asJavaLock();
        Thread.currentThread().interrupt();
        try {
            assertThat(lock.tryLock()).isTrue();
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
        } finally {
            Thread.interrupted();
        }
        lock.unlock();
    }

    @Test
    void lock_interruptedWhileWaiting_keepsItsPlaceAndRestoresTheFlag() throws Exception {
        LockClient holder = open();
        Lease held = holder.lock("x").acquire();
        LockClient c = open(server.connect(), LockOptions.builder().localQueueing(false));
        AtomicBoolean flagAfter = new AtomicBoolean();
        List<String> order = new CopyOnWriteArrayList<>();
        AtomicInteger firstThreadStarted = new AtomicInteger();
        Thread first = new Thread(() -> {
            firstThreadStarted.incrementAndGet();
            Lock l = c.lock("x").asJavaLock();
            l.lock();
            flagAfter.set(Thread.interrupted());
            order.add("first");
            l.unlock();
        });
        first.start();
        eventually().until(() -> server.queue("x").size() == 2);
        String firstEntry = server.queue("x").get(1).acquisitionId();
        Future<?> second = threads.submit(() -> {
            Lock l = c.lock("x").asJavaLock();
            l.lock();
            order.add("second");
            l.unlock();
        });
        eventually().until(() -> server.queue("x").size() == 3);
        for (int i = 0; i < 5; i++) {
            first.interrupt();
            Thread.sleep(20); // give an interrupt time to (wrongly) withdraw and re-enqueue
        }
        assertThat(server.queue("x").get(1).acquisitionId())
                .as("first waiter kept its entry")
                .isEqualTo(firstEntry);

        held.close();
        first.join(5_000);
        second.get(5, TimeUnit.SECONDS);
        assertThat(order).containsExactly("first", "second");
        assertThat(flagAfter).as("interrupt flag restored").isTrue();
    }

    // ---- item 12: very long waits saturate

    @Test
    void multiLock_withAWaitTooLongForNanoseconds_saturates() throws Exception {
        LockClient c = open();
        DistributedLock multi = c.multiLock(List.of("a", "b"));
        Duration forever = Duration.ofMillis(Long.MAX_VALUE);
        Optional<Lease> lease = multi.tryAcquire(forever);
        assertThat(lease).isPresent();
        lease.get().close();
        Lease async = multi.acquireAsync(forever).get(5, TimeUnit.SECONDS);
        assertThat(async.isValid()).isTrue();
        async.close();
    }

    @Test
    void acquireAsync_withTheLongestNanosecondWait_waitsInsteadOfTimingOut() throws Exception {
        LockClient holder = open();
        Lease held = holder.lock("x").acquire();
        LockClient c = open();
        CompletableFuture<Lease> f = c.lock("x").acquireAsync(Duration.ofNanos(Long.MAX_VALUE));
        Future<Optional<Lease>> blocking =
                threads.submit(() -> open().lock("x").tryAcquire(Duration.ofNanos(Long.MAX_VALUE)));
        eventually().until(() -> server.queue("x").size() == 3);
        assertThat(f).isNotDone();
        held.close();
        f.get(5, TimeUnit.SECONDS).close();
        assertThat(blocking.get(5, TimeUnit.SECONDS)).isPresent();
    }

    // ---- item 13: withLock interrupted

    @Test
    void withLock_interruptedWhileWaiting_throwsLockInterruptedExceptionWithTheFlagSet() throws Exception {
        LockClient holder = open();
        Lease held = holder.lock("x").acquire();
        LockClient c = open();
        AtomicBoolean flag = new AtomicBoolean();
        java.util.concurrent.atomic.AtomicReference<Throwable> thrown =
                new java.util.concurrent.atomic.AtomicReference<>();
        Thread t = new Thread(() -> {
            try {
                c.withLock("x", Duration.ofMinutes(1), () -> "never");
            } catch (Throwable e) {
                thrown.set(e);
                flag.set(Thread.currentThread().isInterrupted());
            }
        });
        t.start();
        eventually().until(() -> server.queue("x").size() == 2);
        t.interrupt();
        t.join(5_000);
        assertThat(thrown.get())
                .isInstanceOf(LockInterruptedException.class)
                .hasCauseInstanceOf(InterruptedException.class);
        assertThat(((LockInterruptedException) thrown.get()).lockName()).isEqualTo("x");
        assertThat(flag).isTrue();
        assertThat(server.queue("x")).hasSize(1);
        held.close();
    }

    // ---- item 2 (engine side): a failed lookup after a lost reply is retried, never taken for "none"

    @Test
    void lostEnqueueReply_lookupsFailForAWhile_theEntryIsFoundAndRemovedLater() throws Exception {
        InMemoryBackend backend = server.connect();
        LockClient c = open(
                backend,
                LockOptions.builder()
                        .connectTimeout(Duration.ofMillis(300))
                        .retryPolicy(RetryPolicy.exponentialBackoff(Duration.ofMillis(20), Duration.ofMillis(100), 3)));
        LockClient holder = open();
        Lease held = holder.lock("x").acquire();
        backend.failNextEnqueue(InMemoryBackend.FailMode.AFTER_APPLY);
        backend.failLookups(2); // the old engine took its first failed lookup for none

        assertThatThrownBy(() -> c.lock("x").tryAcquire(Duration.ofMinutes(1)))
                .isInstanceOf(LockBackendException.class);

        eventually().until(() -> server.queue("x").size() == 1);
        assertThat(backend.lookups()).isGreaterThan(2);
        held.close();
        assertThat(open().lock("x").tryAcquire(Duration.ofSeconds(2)))
                .as("nobody blocks the lock")
                .isPresent();
    }

    // ---- item 14: an entry lost while waiting, racing a cancel, leaves nothing behind

    @Test
    void entryLostWhileWaiting_racingATimeout_leavesNoEntry() throws Exception {
        LockClient holder = open();
        Lease held = holder.lock("x").acquire();
        LockClient c = open(server.connect(), LockOptions.builder().localQueueing(false));
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        for (int i = 0; i < 300 && System.nanoTime() < end; i++) {
            Future<Optional<Lease>> waiter = threads.submit(() -> c.lock("x").tryAcquire(Duration.ofMillis(30)));
            eventually().until(() -> server.queue("x").size() >= 2 || waiter.isDone());
            List<QueueEntry> q = server.queue("x");
            if (q.size() >= 2) {
                Thread.sleep(i % 30); // land the loss before, at or after the timeout
                server.connect().expire(q.get(1));
            }
            assertThat(waiter.get(5, TimeUnit.SECONDS)).isEmpty();
            eventually()
                    .alias("trial " + i + " leaves only the holder's entry")
                    .until(() -> server.queue("x").size() == 1);
        }
        assertThat(held.isValid()).isTrue();
    }

    // ---- item 6: the listener thread is the client's own

    @Test
    void lostListener_doesNotRunOnTheCallbackPool() throws Exception {
        LockClient c = open();
        Lease lease = c.lock("x").acquire();
        CompletableFuture<String> thread = new CompletableFuture<>();
        lease.onLost(e -> thread.complete(Thread.currentThread().getName()));
        ((EngineLease) lease).acquisition().lose(LockMetrics.LossCause.REMOVED, "lost for the test", null);
        assertThat(thread.get(5, TimeUnit.SECONDS)).contains("-listener-");
        assertThatThrownBy(lease::checkValid).isInstanceOf(LockLostException.class);
    }

    @Test
    void timedOutWait_isReportedAsTimeout() throws Exception {
        LockClient holder = open();
        Lease held = holder.lock("x").acquire();
        LockClient c = open();
        CompletableFuture<Lease> f = c.lock("x").acquireAsync(Duration.ofMillis(50));
        assertThatThrownBy(() -> f.get(5, TimeUnit.SECONDS)).hasCauseInstanceOf(LockTimeoutException.class);
        eventually().until(() -> server.queue("x").size() == 1);
        held.close();
    }
}
