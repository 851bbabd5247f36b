package io.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Capability;
import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.LockOptions;
import io.dlock.LockTimeoutException;
import io.dlock.Ticker;
import io.dlock.spi.ConnectionState;
import io.dlock.spi.LockMode;
import io.dlock.spi.QueueEntry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import java.util.stream.Stream;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The engine over {@link InMemoryBackend}. The clients use a fake ticker that stands still, so the
 * stall detector never fires on a busy machine; suspension bounds and waits run on real time.
 */
class EngineClientTest {
    private static final Duration LONG = Duration.ofMinutes(1);

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final Ticker ticker = now::get;
    private final List<LockClient> clients = new ArrayList<>();
    private final ExecutorService threads = Executors.newCachedThreadPool();

    private InMemoryBackend.Server server;
    private InMemoryBackend backend;
    private LockClient client;

    @BeforeEach
    void setUp() {
        server = new InMemoryBackend.Server();
        backend = server.connect();
        client = open(backend);
    }

    @AfterEach
    void tearDown() {
        threads.shutdownNow();
        clients.forEach(LockClient::close);
    }

    private LockClient open(InMemoryBackend b) {
        LockClient c = LockEngine.newClient(
                b, LockOptions.builder().ticker(ticker).callbackThreads(1).build());
        clients.add(c);
        return c;
    }

    private LockClient otherClient() {
        return open(server.connect());
    }

    /** A client whose waiting threads each stand in the backend queue (no JVM-local queueing). */
    private LockClient clientWithoutLocalQueueing() {
        LockClient c = LockEngine.newClient(
                server.connect(),
                LockOptions.builder()
                        .ticker(ticker)
                        .callbackThreads(1)
                        .localQueueing(false)
                        .build());
        clients.add(c);
        return c;
    }

    private static ConditionFactory eventually() {
        return await().atMost(Duration.ofSeconds(5)).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(5));
    }

    /** Runs everything queued on the client's (single) callback thread so far. */
    private static void flushCallbacks(LockClient c) throws Exception {
        ((EngineClient) c).callbacks.submit(() -> {}).get(5, TimeUnit.SECONDS);
    }

    private List<String> queueIds(String name) {
        List<String> ids = new ArrayList<>();
        for (QueueEntry e : backend.queue(name)) {
            ids.add(e.acquisitionId());
        }
        return ids;
    }

    private void awaitQueueSize(String name, int size) {
        eventually().until(() -> backend.queue(name).size() == size);
    }

    private <T> Future<T> inThread(java.util.concurrent.Callable<T> task) {
        return threads.submit(task);
    }

    // ---- reentrancy

    @Test
    void acquire_reentrantThreeDeep_enqueuesOnceAndSharesToken() throws Exception {
        DistributedLock lock = client.lock("orders");

        Lease outer = lock.acquire();
        Lease middle = lock.acquire();
        Lease inner = client.lock("orders").tryAcquire(Duration.ZERO).orElseThrow();

        assertThat(backend.enqueues()).isEqualTo(1);
        assertThat(backend.queue("orders")).hasSize(1);
        assertThat(middle.fencingToken()).isEqualTo(outer.fencingToken()).isPositive();
        assertThat(inner.fencingToken()).isEqualTo(outer.fencingToken());
        assertThat(List.of(outer, middle, inner)).allMatch(Lease::isValid);
        assertThat(lock.isHeldByCurrentThread()).isTrue();
        inner.close();
        middle.close();
        outer.close();
    }

    @Test
    void close_nestedLease_onlyDecrements() throws Exception {
        DistributedLock lock = client.lock("orders");
        Lease outer = lock.acquire();
        Lease middle = lock.acquire();
        Lease inner = lock.acquire();

        inner.close();
        middle.close();

        assertThat(inner.isValid()).isFalse();
        assertThat(middle.isValid()).isFalse();
        assertThat(outer.isValid()).isTrue();
        assertThat(lock.isHeldByCurrentThread()).isTrue();
        assertThat(backend.queue("orders")).hasSize(1);
        assertThat(backend.releases()).isZero();

        outer.close();

        assertThat(outer.isValid()).isFalse();
        assertThat(lock.isHeldByCurrentThread()).isFalse();
        assertThat(backend.queue("orders")).isEmpty();
        assertThat(backend.releases()).isEqualTo(1);
    }

    @Test
    void close_twice_isIdempotent() throws Exception {
        DistributedLock lock = client.lock("orders");
        Lease outer = lock.acquire();
        Lease inner = lock.acquire();

        inner.close();
        inner.close(); // must not drop the outer hold

        assertThat(outer.isValid()).isTrue();
        assertThat(backend.queue("orders")).hasSize(1);
        outer.close();
        outer.close();
        assertThat(backend.releases()).isEqualTo(1);
    }

    @Test
    void acquire_afterOuterRelease_getsNewGrantWithHigherToken() throws Exception {
        DistributedLock lock = client.lock("orders");
        long first;
        try (Lease l = lock.acquire()) {
            first = l.fencingToken();
        }
        try (Lease l = lock.acquire()) {
            assertThat(l.fencingToken()).isGreaterThan(first);
        }
        assertThat(backend.enqueues()).isEqualTo(2);
    }

    @Test
    void checkValid_closedLease_throwsLockLostNamingLockAndBackend() throws Exception {
        Lease lease = client.lock("orders").acquire();
        lease.checkValid();
        lease.close();

        assertThatThrownBy(lease::checkValid)
                .isInstanceOf(LockLostException.class)
                .hasMessageStartingWith("lock 'orders' on inmemory: ");
    }

    // ---- zero wait, timeouts, cancel, interrupt

    @Test
    void tryAcquire_zeroWaitWhileHeld_returnsEmpty() throws Exception {
        LockClient other = otherClient();
        try (Lease held = client.lock("orders").acquire()) {
            List<String> before = queueIds("orders");
            long start = System.nanoTime();

            Optional<Lease> attempt = other.lock("orders").tryAcquire(Duration.ZERO);

            assertThat(attempt).isEmpty();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(2));
            assertThat(queueIds("orders")).isEqualTo(before);
            assertThat(held.isValid()).isTrue();
        }
        assertThat(backend.queue("orders")).isEmpty();
    }

    @Test
    void tryAcquire_zeroWaitWhileHeldByAnotherThreadOfSameClient_returnsEmpty() throws Exception {
        try (Lease held = client.lock("orders").acquire()) {
            Optional<Lease> attempt = inThread(() -> client.lock("orders").tryAcquire(Duration.ZERO))
                    .get(5, TimeUnit.SECONDS);

            assertThat(attempt).isEmpty();
            assertThat(backend.queue("orders")).hasSize(1);
        }
    }

    @Test
    void tryAcquire_zeroWaitWhenFree_acquires() throws Exception {
        Optional<Lease> lease = client.lock("orders").tryAcquire(Duration.ZERO);

        assertThat(lease).isPresent();
        assertThat(lease.get().isValid()).isTrue();
        lease.get().close();
    }

    @Test
    void tryAcquire_timesOutWhileHeld_returnsEmptyAndLeavesNoEntry() throws Exception {
        LockClient other = otherClient();
        try (Lease held = client.lock("orders").acquire()) {
            List<String> before = queueIds("orders");

            Optional<Lease> attempt = other.lock("orders").tryAcquire(Duration.ofMillis(100));

            assertThat(attempt).isEmpty();
            assertThat(queueIds("orders")).isEqualTo(before);
            assertThat(backend.enqueues()).isEqualTo(2);
        }
    }

    @Test
    void acquireAsync_timesOutWhileHeld_failsWithLockTimeoutAndLeavesNoEntry() throws Exception {
        LockClient other = otherClient();
        try (Lease held = client.lock("orders").acquire()) {
            List<String> before = queueIds("orders");

            CompletableFuture<Lease> f = other.lock("orders").acquireAsync(Duration.ofMillis(100));

            assertThatThrownBy(() -> f.get(5, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOf(LockTimeoutException.class)
                    .hasMessageStartingWith("lock 'orders' on inmemory: ");
            assertThat(queueIds("orders")).isEqualTo(before); // withdrawn before the future failed
        }
    }

    @Test
    void acquireAsync_zeroWaitWhileHeld_failsWithLockTimeout() throws Exception {
        try (Lease held = client.lock("orders").acquire()) {
            CompletableFuture<Lease> f = otherClient().lock("orders").acquireAsync(Duration.ZERO);

            assertThatThrownBy(() -> f.get(5, TimeUnit.SECONDS)).cause().isInstanceOf(LockTimeoutException.class);
            assertThat(backend.queue("orders")).hasSize(1);
        }
    }

    @Test
    void acquireAsync_free_leaseClosableFromAnyThread() throws Exception {
        Lease lease = client.lock("orders").acquireAsync(LONG).get(5, TimeUnit.SECONDS);

        assertThat(lease.isValid()).isTrue();
        assertThat(client.lock("orders").isHeldByCurrentThread()).isFalse(); // owned by the lease

        inThread(() -> {
                    lease.close();
                    return null;
                })
                .get(5, TimeUnit.SECONDS);

        assertThat(lease.isValid()).isFalse();
        assertThat(backend.queue("orders")).isEmpty();
    }

    @Test
    void acquireAsync_cancelledWhileWaiting_leavesNoEntry() throws Exception {
        LockClient other = otherClient();
        Lease held = client.lock("orders").acquire();
        CompletableFuture<Lease> f = other.lock("orders").acquireAsync(LONG);
        awaitQueueSize("orders", 2);

        assertThat(f.cancel(true)).isTrue();

        awaitQueueSize("orders", 1);
        held.close();
        assertThat(backend.queue("orders")).isEmpty();
        try (Lease next = other.lock("orders").tryAcquire(Duration.ofSeconds(5)).orElseThrow()) {
            assertThat(next.isValid()).isTrue();
        }
    }

    @Test
    void acquireAsync_cancelledWhileEnqueueReplyInFlight_withdrawsEntryWhenReplyArrives() throws Exception {
        backend.holdEnqueueReplies(true);
        CompletableFuture<Lease> f = client.lock("orders").acquireAsync(LONG);
        eventually().until(() -> backend.heldReplies() == 1);
        assertThat(backend.queue("orders")).hasSize(1); // applied on the server, reply not yet seen

        f.cancel(true);
        backend.holdEnqueueReplies(false);
        backend.deliverHeldReplies();

        awaitQueueSize("orders", 0);
        assertThat(f).isCancelled();
    }

    @Test
    void cancel_whileEnqueueReplyInFlight_withdrawsEntryWhenReplyArrives() throws Exception {
        EngineClient engine = (EngineClient) client;
        backend.holdEnqueueReplies(true);
        Acquisition a = engine.newAcquisition(
                "orders", LockMode.EXCLUSIVE, 1, 1, Thread.currentThread(), true, Duration.ofMillis(20));
        a.start();
        eventually().until(() -> backend.heldReplies() == 1);
        assertThat(backend.queue("orders")).hasSize(1); // the server granted it; the reply is in flight

        a.cancel(new LockTimeoutException("orders", "inmemory", Duration.ofMillis(20))); // what the timer does
        assertThat(a.state()).isEqualTo(LockState.CANCELLED);
        assertThat(a.outcome()).isNotDone(); // not before the entry is gone
        backend.holdEnqueueReplies(false);
        backend.deliverHeldReplies();

        assertThatThrownBy(() -> a.outcome().get(5, TimeUnit.SECONDS)).cause().isInstanceOf(LockTimeoutException.class);
        assertThat(backend.queue("orders")).isEmpty(); // withdrawn before the outcome completed
        assertThat(engine.heldBy("orders", LockMode.EXCLUSIVE, Thread.currentThread()))
                .isNull();
    }

    @Test
    void tryAcquire_requestUnansweredPastWaitAndConnectTimeout_throwsBackendExceptionAndWithdrawsOnReply()
            throws Exception {
        InMemoryBackend b = server.connect();
        LockClient c = LockEngine.newClient(
                b,
                LockOptions.builder()
                        .ticker(ticker)
                        .callbackThreads(1)
                        .connectTimeout(Duration.ofMillis(300))
                        .build());
        clients.add(c);
        b.holdEnqueueReplies(true); // a partition: the reply does not come back

        long t0 = System.nanoTime();
        // Unreachable is not busy: no answer is an outage, never "someone else holds it".
        assertThatThrownBy(() -> c.lock("orders").tryAcquire(Duration.ofMillis(100)))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("no answer from inmemory://server/session-")
                .hasMessageContaining("within 400 ms");
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertThat(tookMs)
                .as("bounded by wait + connectTimeout, not by the unanswered request")
                .isLessThan(4_000);
        assertThat(b.heldReplies()).isEqualTo(1); // still unanswered when the caller gave up
        assertThat(b.queue("orders")).hasSize(1); // and it was granted on the server

        b.holdEnqueueReplies(false);
        b.deliverHeldReplies();
        awaitQueueSize("orders", 0); // the late reply withdraws the grant nobody took
    }

    @Test
    void tryAcquireZero_connectionKnownDown_throwsBackendExceptionAtOnceAndSendsNothing() throws Exception {
        InMemoryBackend b = server.connect();
        LockClient c =
                LockEngine.newClient(b, LockOptions.builder().callbackThreads(1).build());
        clients.add(c);
        b.emit(ConnectionState.SUSPENDED);
        int enqueues = server.enqueues.get();
        long t0 = System.nanoTime();
        assertThatThrownBy(() -> c.lock("orders").tryAcquire(Duration.ZERO))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("connection to inmemory://server/session-")
                .hasMessageContaining("is down");
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0)).isLessThan(1_000);
        assertThat(server.enqueues.get()).isEqualTo(enqueues);
        // Back up: one attempt works again, and a lock held by someone else is "empty", not an error.
        b.emit(ConnectionState.RECONNECTED);
        try (Lease held = c.lock("orders").tryAcquire(Duration.ZERO).orElseThrow()) {
            assertThat(otherClient().lock("orders").tryAcquire(Duration.ZERO)).isEmpty();
        }
    }

    @Test
    void acquire_interruptedWhileWaiting_throwsInterruptedAndLeavesNoEntry() throws Exception {
        LockClient other = otherClient();
        try (Lease held = client.lock("orders").acquire()) {
            List<String> before = queueIds("orders");
            AtomicReference<Thread> waiter = new AtomicReference<>();
            AtomicBoolean flagAfterCatch = new AtomicBoolean(true);
            Future<Throwable> outcome = inThread(() -> {
                waiter.set(Thread.currentThread());
                try {
                    other.lock("orders").acquire().close();
                    return null;
                } catch (InterruptedException e) {
                    flagAfterCatch.set(Thread.currentThread().isInterrupted());
                    return e;
                }
            });
            awaitQueueSize("orders", 2);

            waiter.get().interrupt();

            assertThat(outcome.get(5, TimeUnit.SECONDS)).isInstanceOf(InterruptedException.class);
            assertThat(flagAfterCatch).isFalse(); // the exception reports the interrupt; the flag is clear
            assertThat(queueIds("orders")).isEqualTo(before);
            assertThat(held.isValid()).isTrue();
        }
    }

    @Test
    void tryAcquire_interruptedBeforeCall_throwsAndEnqueuesNothing() {
        Thread.currentThread().interrupt();
        try {
            assertThatThrownBy(() -> client.lock("orders").tryAcquire(LONG)).isInstanceOf(InterruptedException.class);
            assertThat(Thread.currentThread().isInterrupted()).isFalse();
            assertThat(backend.enqueues()).isZero();
        } finally {
            Thread.interrupted();
        }
    }

    @Test
    void asJavaLock_lockWithInterruptFlagSet_acquiresAndRestoresFlag() {
        Lock lock = client.lock("orders").asJavaLock();
        Thread.currentThread().interrupt();
        try {
            lock.lock();
            assertThat(Thread.currentThread().isInterrupted()).isTrue();
            assertThat(client.lock("orders").isHeldByCurrentThread()).isTrue();
        } finally {
            Thread.interrupted();
        }
        lock.unlock();
        assertThat(backend.queue("orders")).isEmpty();
    }

    // ---- ownership

    @Test
    void close_fromNonOwnerThread_throwsIllegalMonitorStateAndStaysHeld() throws Exception {
        Lease lease = client.lock("orders").acquire();

        Throwable thrown = inThread(() -> {
                    try {
                        lease.close();
                        return null;
                    } catch (Throwable t) {
                        return t;
                    }
                })
                .get(5, TimeUnit.SECONDS);

        assertThat(thrown)
                .isInstanceOf(IllegalMonitorStateException.class)
                .hasMessageContaining("orders")
                .hasMessageContaining(Thread.currentThread().getName());
        assertThat(lease.isValid()).isTrue();
        assertThat(backend.queue("orders")).hasSize(1);
        lease.close();
        assertThat(backend.queue("orders")).isEmpty();
    }

    @Test
    void asJavaLock_unlockByNonHolder_throwsIllegalMonitorState() throws Exception {
        Lock lock = client.lock("orders").asJavaLock();

        assertThatThrownBy(lock::unlock)
                .isInstanceOf(IllegalMonitorStateException.class)
                .hasMessageContaining("orders");

        lock.lock();
        Throwable fromOther = inThread(() -> {
                    try {
                        lock.unlock();
                        return null;
                    } catch (Throwable t) {
                        return t;
                    }
                })
                .get(5, TimeUnit.SECONDS);
        assertThat(fromOther).isInstanceOf(IllegalMonitorStateException.class);
        assertThat(client.lock("orders").isHeldByCurrentThread()).isTrue();
        lock.unlock();
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalMonitorStateException.class);
    }

    @Test
    void asJavaLock_lockTwice_releasesAtOutermostUnlock() throws Exception {
        Lock lock = client.lock("orders").asJavaLock();
        lock.lock();
        assertThat(lock.tryLock()).isTrue();
        assertThat(backend.enqueues()).isEqualTo(1);

        lock.unlock();
        assertThat(backend.queue("orders")).hasSize(1);
        lock.unlock();
        assertThat(backend.queue("orders")).isEmpty();
    }

    @Test
    void asJavaLock_tryLockWhileHeldElsewhere_returnsFalse() throws Exception {
        try (Lease held = otherClient().lock("orders").acquire()) {
            Lock lock = client.lock("orders").asJavaLock();

            assertThat(lock.tryLock()).isFalse();
            assertThat(lock.tryLock(50, TimeUnit.MILLISECONDS)).isFalse();
            assertThat(backend.queue("orders")).hasSize(1);
        }
    }

    @Test
    void asJavaLock_newCondition_throwsUnsupported() {
        assertThatThrownBy(() -> client.lock("orders").asJavaLock().newCondition())
                .isInstanceOf(UnsupportedOperationException.class);
    }

    // ---- loss

    @Test
    void onLost_connectionLost_firesExactlyOnce() throws Exception {
        Lease lease = client.lock("orders").acquire();
        List<LockLostException> seen = new CopyOnWriteArrayList<>();
        lease.onLost(seen::add);

        backend.emit(ConnectionState.LOST);
        eventually().until(() -> seen.size() == 1);
        backend.emit(ConnectionState.LOST);
        flushCallbacks(client);

        assertThat(seen).hasSize(1);
        assertThat(seen.get(0).lockName()).isEqualTo("orders");
        assertThat(seen.get(0)).hasMessageStartingWith("lock 'orders' on inmemory: lease lost");
        assertThat(lease.isValid()).isFalse();
        assertThat(client.lock("orders").isHeldByCurrentThread()).isFalse();
        assertThatThrownBy(lease::checkValid).isSameAs(seen.get(0));
        lease.close(); // closing a lost lease is harmless
        eventually().until(() -> backend.queue("orders").isEmpty()); // the engine cleans its entry up
    }

    @Test
    void onLost_normalClose_neverFires() throws Exception {
        Lease lease = client.lock("orders").acquire();
        AtomicInteger fired = new AtomicInteger();
        lease.onLost(e -> fired.incrementAndGet());

        lease.close();
        backend.emit(ConnectionState.LOST);
        flushCallbacks(client);

        assertThat(fired).hasValue(0);
    }

    @Test
    void onLost_addedAfterLoss_runsAtOnceOnCallingThread() throws Exception {
        Lease lease = client.lock("orders").acquire();
        backend.emit(ConnectionState.LOST);
        assertThat(lease.isValid()).isFalse();
        AtomicReference<Thread> ranOn = new AtomicReference<>();
        AtomicInteger fired = new AtomicInteger();

        lease.onLost(e -> {
            ranOn.set(Thread.currentThread());
            fired.incrementAndGet();
        });

        assertThat(ranOn).hasValue(Thread.currentThread());
        flushCallbacks(client);
        assertThat(fired).hasValue(1);
    }

    @Test
    void onLost_listenerThrows_otherListenersStillRun() throws Exception {
        Lease lease = client.lock("orders").acquire();
        AtomicInteger fired = new AtomicInteger();
        lease.onLost(e -> {
            throw new IllegalStateException("listener failure (expected in this test)");
        });
        lease.onLost(e -> fired.incrementAndGet());

        backend.emit(ConnectionState.LOST);
        eventually().until(() -> fired.get() == 1);
    }

    @Test
    void onLost_nullListener_throwsNullPointer() throws Exception {
        try (Lease lease = client.lock("orders").acquire()) {
            assertThatThrownBy(() -> lease.onLost(null)).isInstanceOf(NullPointerException.class);
        }
    }

    @Test
    void onLost_asyncLeaseOnConnectionLost_firesOnce() throws Exception {
        Lease lease = client.lock("orders").acquireAsync(LONG).get(5, TimeUnit.SECONDS);
        AtomicInteger fired = new AtomicInteger();
        lease.onLost(e -> fired.incrementAndGet());

        backend.emit(ConnectionState.LOST);
        eventually().until(() -> fired.get() == 1);
        flushCallbacks(client);

        assertThat(fired).hasValue(1);
        assertThat(lease.isValid()).isFalse();
    }

    @Test
    void suspendedThenReconnected_withinMaxSuspension_leaseStaysValid() throws Exception {
        backend.maxSuspension(Duration.ofMillis(150));
        Lease lease = client.lock("orders").acquire();
        AtomicInteger fired = new AtomicInteger();
        lease.onLost(e -> fired.incrementAndGet());

        backend.emit(ConnectionState.SUSPENDED);
        backend.emit(ConnectionState.RECONNECTED);

        // The suspension timer (150 ms) has passed by the end of this window; the lease survives it.
        await().pollDelay(Duration.ZERO)
                .pollInterval(Duration.ofMillis(10))
                .during(Duration.ofMillis(400))
                .atMost(Duration.ofSeconds(2))
                .until(lease::isValid);
        flushCallbacks(client);
        assertThat(fired).hasValue(0);
        lease.close();
    }

    @Test
    void suspended_longerThanMaxSuspension_invalidatesAndFiresOnLostOnce() throws Exception {
        backend.maxSuspension(Duration.ofMillis(150));
        Lease lease = client.lock("orders").acquire();
        AtomicInteger fired = new AtomicInteger();
        lease.onLost(e -> fired.incrementAndGet());

        backend.emit(ConnectionState.SUSPENDED);

        eventually().until(() -> !lease.isValid());
        eventually().until(() -> fired.get() == 1);
        backend.emit(ConnectionState.RECONNECTED);
        backend.emit(ConnectionState.LOST);
        flushCallbacks(client);
        assertThat(fired).hasValue(1);
        assertThat(lease.isValid()).isFalse(); // a lease never becomes valid again
        assertThatThrownBy(lease::checkValid)
                .isInstanceOf(LockLostException.class)
                .hasMessageContaining("suspended");
    }

    /**
     * Repeated SUSPENDED events (a client library that reports every failed reconnect attempt)
     * must not restart the suspension clock: grants are safe only {@code maxSuspension} after the
     * connection first dropped.
     */
    @Test
    void suspended_repeatedEvents_doNotPostponeLoss() throws Exception {
        backend.maxSuspension(Duration.ofMillis(300));
        Lease lease = client.lock("orders").acquire();
        ScheduledExecutorService reporter = Executors.newSingleThreadScheduledExecutor();
        try {
            reporter.scheduleAtFixedRate(() -> backend.emit(ConnectionState.SUSPENDED), 0, 100, TimeUnit.MILLISECONDS);

            await().atMost(Duration.ofSeconds(3))
                    .pollInterval(Duration.ofMillis(10))
                    .until(() -> !lease.isValid());
        } finally {
            reporter.shutdownNow();
        }
    }

    // ---- client close

    @Test
    void close_client_releasesLeasesWithoutOnLost() throws Exception {
        Lease lease = client.lock("orders").acquire();
        Lease async = client.lock("payments").acquireAsync(LONG).get(5, TimeUnit.SECONDS);
        AtomicInteger fired = new AtomicInteger();
        lease.onLost(e -> fired.incrementAndGet());
        async.onLost(e -> fired.incrementAndGet());

        client.close();

        assertThat(((EngineClient) client).callbacks.awaitTermination(5, TimeUnit.SECONDS))
                .isTrue();
        assertThat(fired).hasValue(0);
        assertThat(lease.isValid()).isFalse();
        assertThat(async.isValid()).isFalse();
        assertThat(backend.queue("orders")).isEmpty();
        assertThat(backend.queue("payments")).isEmpty();
        assertThat(backend.isClosed()).isTrue();
        lease.close(); // after the client closed: harmless
    }

    @Test
    void close_client_withdrawsWaitersAndFailsThem() throws Exception {
        LockClient holder = otherClient();
        Lease held = holder.lock("orders").acquire();
        LockClient client = clientWithoutLocalQueueing();
        Future<Lease> blocking = inThread(() -> client.lock("orders").acquire());
        awaitQueueSize("orders", 2);
        CompletableFuture<Lease> async = client.lock("orders").acquireAsync(LONG);
        awaitQueueSize("orders", 3);

        client.close();

        assertThatThrownBy(() -> blocking.get(5, TimeUnit.SECONDS)).cause().isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> async.get(5, TimeUnit.SECONDS)).cause().isInstanceOf(IllegalStateException.class);
        assertThat(backend.queue("orders")).hasSize(1);
        assertThat(held.isValid()).isTrue();
        held.close();
        assertThat(backend.queue("orders")).isEmpty();
    }

    @Test
    void close_client_laterCallsThrowIllegalState() throws Exception {
        DistributedLock handle = client.lock("orders");
        client.close();
        client.close(); // idempotent

        assertThatThrownBy(() -> client.lock("orders")).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(handle::acquire).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> handle.tryAcquire(Duration.ZERO)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> handle.acquireAsync(Duration.ZERO)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> client.withLock("orders", Duration.ZERO, () -> 1))
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> client.readWriteLock("orders")).isInstanceOf(IllegalStateException.class);
        assertThat(backend.enqueues()).isZero();
    }

    // ---- withLock

    @Test
    void withLock_free_returnsActionValueAndReleases() {
        String result = client.withLock("orders", Duration.ofSeconds(1), () -> {
            assertThat(backend.queue("orders")).hasSize(1);
            return "done";
        });

        assertThat(result).isEqualTo("done");
        assertThat(backend.queue("orders")).isEmpty();
    }

    @Test
    void withLock_heldElsewhere_throwsLockTimeoutWithoutRunningAction() throws Exception {
        AtomicBoolean ran = new AtomicBoolean();
        try (Lease held = otherClient().lock("orders").acquire()) {
            assertThatThrownBy(() -> client.withLock("orders", Duration.ofMillis(50), () -> ran.getAndSet(true)))
                    .isInstanceOf(LockTimeoutException.class)
                    .hasMessageStartingWith("lock 'orders' on inmemory: ")
                    .satisfies(e ->
                            assertThat(((LockTimeoutException) e).waitTime()).isEqualTo(Duration.ofMillis(50)));
            assertThat(backend.queue("orders")).hasSize(1);
        }
        assertThat(ran).isFalse();
    }

    @Test
    void withLock_actionThrows_releasesAndPropagates() {
        IllegalStateException boom = new IllegalStateException("boom");

        assertThatThrownBy(() -> client.withLock("orders", Duration.ZERO, () -> {
                    throw boom;
                }))
                .isSameAs(boom);
        assertThat(backend.queue("orders")).isEmpty();
        assertThat(client.lock("orders").isHeldByCurrentThread()).isFalse();
    }

    @Test
    void withLock_checkedException_wrapsInCompletionExceptionAndReleases() {
        Exception checked = new java.io.IOException("disk");

        assertThatThrownBy(() -> client.withLock("orders", Duration.ZERO, () -> {
                    throw checked;
                }))
                .isInstanceOf(CompletionException.class)
                .hasCause(checked);
        assertThat(backend.queue("orders")).isEmpty();
    }

    @Test
    void withLock_whileHoldingSameLock_reentersWithoutEnqueue() throws Exception {
        try (Lease outer = client.lock("orders").acquire()) {
            long token = client.withLock("orders", Duration.ZERO, () -> 42L);
            assertThat(token).isEqualTo(42L);
            assertThat(outer.isValid()).isTrue();
            assertThat(backend.enqueues()).isEqualTo(1);
        }
    }

    // ---- fairness and mutual exclusion

    @Test
    void acquireAsync_severalWaiters_grantedInArrivalOrderWakingOnlyTheNext() throws Exception {
        LockClient other = clientWithoutLocalQueueing();
        Lease first = client.lock("orders").acquire();
        List<CompletableFuture<Lease>> waiters = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            waiters.add(other.lock("orders").acquireAsync(LONG));
            awaitQueueSize("orders", i + 2); // fixes the order of arrival
        }
        long lastToken = first.fencingToken();

        first.close();
        for (int i = 0; i < waiters.size(); i++) {
            Lease lease = waiters.get(i).get(5, TimeUnit.SECONDS);
            for (int j = i + 1; j < waiters.size(); j++) {
                assertThat(waiters.get(j)).as("waiter %d before %d", j, i).isNotDone();
            }
            assertThat(lease.fencingToken()).isGreaterThan(lastToken);
            lastToken = lease.fencingToken();
            lease.close();
        }
        assertThat(backend.queue("orders")).isEmpty();
        assertThat(backend.wakeUps()).isLessThanOrEqualTo(waiters.size());
    }

    @Test
    void acquire_eightThreadsOnTwoClients_mutuallyExclusive() throws Exception {
        LockClient second = otherClient();
        int perThread = 25;
        int[] counter = {0};
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        AtomicLong lastToken = new AtomicLong();
        AtomicInteger tokenRegressions = new AtomicInteger();
        List<Future<?>> done = new ArrayList<>();
        for (LockClient c : List.of(client, second)) {
            for (int t = 0; t < 8; t++) {
                done.add(threads.submit(() -> {
                    DistributedLock lock = c.lock("counter");
                    for (int i = 0; i < perThread; i++) {
                        try (Lease lease = lock.acquire()) {
                            if (inside.incrementAndGet() != 1) {
                                overlaps.incrementAndGet();
                            }
                            if (lease.fencingToken() <= lastToken.get()) {
                                tokenRegressions.incrementAndGet();
                            }
                            lastToken.set(lease.fencingToken());
                            int read = counter[0];
                            Thread.yield();
                            counter[0] = read + 1;
                            inside.decrementAndGet();
                        }
                    }
                    return null;
                }));
            }
        }
        for (Future<?> f : done) {
            f.get(20, TimeUnit.SECONDS);
        }

        assertThat(counter[0]).isEqualTo(2 * 8 * perThread); // Future.get orders the threads' writes before this
        assertThat(overlaps).hasValue(0);
        assertThat(tokenRegressions).hasValue(0);
        assertThat(server.totalEntries()).isZero();
    }

    // ---- backend failures

    @Test
    void acquire_enqueueRefused_throwsBackendExceptionAndLeavesNoEntry() throws Exception {
        backend.failNextEnqueue(InMemoryBackend.FailMode.BEFORE_APPLY);

        assertThatThrownBy(() -> client.lock("orders").acquire())
                .isInstanceOf(LockBackendException.class)
                .hasMessageStartingWith("lock 'orders' on inmemory: ");
        assertThat(backend.queue("orders")).isEmpty();
        try (Lease lease = client.lock("orders").acquire()) {
            assertThat(lease.isValid()).isTrue();
        }
    }

    @Test
    void acquire_enqueueReplyLost_removesOwnEntryAndThrows() throws Exception {
        backend.failNextEnqueue(InMemoryBackend.FailMode.AFTER_APPLY);

        assertThatThrownBy(() -> client.lock("orders").acquire()).isInstanceOf(LockBackendException.class);

        assertThat(backend.enqueues()).isEqualTo(1);
        assertThat(backend.queue("orders")).isEmpty(); // found by acquisition id and removed
        assertThat(client.lock("orders").isHeldByCurrentThread()).isFalse();
    }

    @Test
    void acquire_waitingEntryVanishes_queuesAgainAndIsGrantedLater() throws Exception {
        LockClient other = otherClient();
        Lease held = client.lock("orders").acquire();
        Future<Long> waiter = inThread(() -> {
            try (Lease l = other.lock("orders").acquire()) {
                return l.fencingToken();
            }
        });
        awaitQueueSize("orders", 2);
        QueueEntry waiting = backend.queue("orders").get(1);

        backend.expire(waiting); // e.g. the waiter's session expired on the server

        eventually()
                .until(() -> backend.queue("orders").size() == 2
                        && !backend.queue("orders").get(1).key().equals(waiting.key()));
        assertThat(backend.queue("orders").get(1).acquisitionId()).isEqualTo(waiting.acquisitionId());
        assertThat(waiter).isNotDone();
        held.close();
        assertThat(waiter.get(5, TimeUnit.SECONDS)).isGreaterThan(held.fencingToken());
        assertThat(backend.queue("orders")).isEmpty();
    }

    @Test
    void acquireAsync_enqueueRefused_failsWithBackendException() {
        backend.failNextEnqueue(InMemoryBackend.FailMode.BEFORE_APPLY);

        CompletableFuture<Lease> f = client.lock("orders").acquireAsync(LONG);

        assertThatThrownBy(() -> f.get(5, TimeUnit.SECONDS)).cause().isInstanceOf(LockBackendException.class);
        assertThat(backend.queue("orders")).isEmpty();
    }

    // ---- bad input

    static Stream<Arguments> badNames() {
        return Stream.of(
                Arguments.of("", "empty"),
                Arguments.of("a".repeat(201), "201"),
                Arguments.of("bad\u0001name", "U+0001"),
                Arguments.of(".", "'.'"),
                Arguments.of("..", "'..'"),
                Arguments.of("a/b", "'/'"),
                Arguments.of("a b", "' '"),
                Arguments.of("caf\u00e9", "'\u00e9'"));
    }

    @ParameterizedTest
    @MethodSource("badNames")
    void lock_badName_throwsIllegalArgumentNamingProblemAndEnqueuesNothing(String name, String problem) {
        assertThatThrownBy(() -> client.lock(name))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(problem);
        assertThatThrownBy(() -> client.withLock(name, Duration.ZERO, () -> 1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> client.multiLock(List.of("ok", name))).isInstanceOf(IllegalArgumentException.class);
        assertThat(backend.enqueues()).isZero();
    }

    @Test
    void lock_nullName_throwsIllegalArgument() {
        assertThatThrownBy(() -> client.lock(null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("lock name");
        assertThat(backend.enqueues()).isZero();
    }

    @Test
    void lock_longestNameWithEveryAllowedCharacter_acquires() throws Exception {
        String alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.:";
        String name = (alphabet + "x".repeat(200)).substring(0, 200);

        try (Lease lease = client.lock(name).acquire()) {
            assertThat(lease.lockName()).isEqualTo(name);
            assertThat(backend.queue(name)).hasSize(1);
        }
    }

    @Test
    void tryAcquire_negativeWait_throwsIllegalArgumentAndEnqueuesNothing() {
        DistributedLock lock = client.lock("orders");
        Duration negative = Duration.ofMillis(-1);

        assertThatThrownBy(() -> lock.tryAcquire(negative))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("wait");
        assertThatThrownBy(() -> lock.acquireAsync(negative)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> client.withLock("orders", negative, () -> 1))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(backend.enqueues()).isZero();
    }

    @Test
    void semaphore_zeroOrNegativePermits_throwsIllegalArgument() {
        assertThatThrownBy(() -> client.semaphore("pool", 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("permits");
        assertThatThrownBy(() -> client.semaphore("pool", -1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void multiLock_emptyOrDuplicates_throwsIllegalArgument() {
        assertThatThrownBy(() -> client.multiLock(List.of())).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> client.multiLock(List.of("a", "b", "a")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'a'");
        assertThat(backend.enqueues()).isZero();
    }

    @Test
    void primitives_backendLackingCapability_throwUnsupportedNamingIt() {
        LockClient plain = open(server.connect(Set.copyOf(EnumSet.of(Capability.EXCLUSIVE))));

        assertThatThrownBy(() -> plain.readWriteLock("rw"))
                .isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("READ_WRITE");
        assertThatThrownBy(() -> plain.semaphore("pool", 3))
                .isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("SEMAPHORE");
        assertThatThrownBy(() -> plain.multiLock(List.of("a", "b")))
                .isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("MULTI_LOCK");
        assertThat(plain.capabilities()).containsExactly(Capability.EXCLUSIVE);
    }

    @Test
    void acquire_sameNameDifferentHandles_shareReentrancy() throws Exception {
        try (Lease a = client.lock("orders").acquire();
                Lease b = client.lock("orders").acquire()) {
            assertThat(b.fencingToken()).isEqualTo(a.fencingToken());
            assertThat(b.lockName()).isEqualTo(a.lockName()).isEqualTo("orders");
            assertThat(backend.enqueues()).isEqualTo(1);
        }
    }
}
