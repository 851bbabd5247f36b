package io.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.LockTimeoutException;
import io.dlock.Ticker;
import io.dlock.spi.ConnectionState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * JVM-local queueing over {@link InMemoryBackend}: waiters of one client queue in the JVM, one
 * stands in the backend, releases hand over locally up to the bound, tokens keep rising.
 */
class LocalQueueingTest {
    private static final Duration LONG = Duration.ofMinutes(1);

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final Ticker ticker = now::get;
    private final List<LockClient> clients = new ArrayList<>();
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

    private LockClient client(int maxLocalHandoffs) {
        return client(server.connect(), maxLocalHandoffs);
    }

    private LockClient client(InMemoryBackend backend, int maxLocalHandoffs) {
        LockClient c = LockEngine.newClient(
                backend,
                LockOptions.builder()
                        .ticker(ticker)
                        .callbackThreads(1)
                        .maxLocalHandoffs(maxLocalHandoffs)
                        .build());
        clients.add(c);
        return c;
    }

    private static ConditionFactory eventually() {
        return await().atMost(Duration.ofSeconds(5)).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(2));
    }

    @Test
    void eightThreadsOfOneClient_mutuallyExclusive_fewBackendEntries_tokensRise() throws Exception {
        LockClient c = client(LockOptions.DEFAULT_MAX_LOCAL_HANDOFFS);
        LockClient other = client(LockOptions.DEFAULT_MAX_LOCAL_HANDOFFS);
        int perThread = 200;
        int[] counter = {0};
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        List<Long> tokens = new CopyOnWriteArrayList<>();
        List<Future<?>> done = new ArrayList<>();
        for (int t = 0; t < 8; t++) {
            LockClient mine = t < 6 ? c : other;
            done.add(threads.submit(() -> {
                for (int i = 0; i < perThread; i++) {
                    try (Lease lease = mine.lock("counter").acquire()) {
                        if (inside.incrementAndGet() != 1) {
                            overlaps.incrementAndGet();
                        }
                        tokens.add(lease.fencingToken());
                        counter[0]++;
                        inside.decrementAndGet();
                    }
                }
                return null;
            }));
        }
        for (Future<?> f : done) {
            f.get(30, TimeUnit.SECONDS);
        }
        assertThat(overlaps.get()).isZero();
        assertThat(counter[0]).isEqualTo(8 * perThread);
        for (int i = 1; i < tokens.size(); i++) {
            assertThat(tokens.get(i)).as("grant %d", i).isGreaterThan(tokens.get(i - 1));
        }
        // Local hand-offs served most grants: far fewer backend entries than grants.
        assertThat(server.enqueues.get()).isLessThan(8 * perThread / 2);
        assertThat(server.totalEntries()).isZero();
    }

    @Test
    void handOffsAreBoundedSoAnotherClientGetsItsTurn() throws Exception {
        LockClient a = client(3);
        LockClient b = client(3);
        Lease first = a.lock("job").acquire();
        CompletableFuture<Lease> fromB = b.lock("job").acquireAsync(LONG);
        eventually().until(() -> server.queue("job").size() == 2);
        List<CompletableFuture<Lease>> fromA = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            fromA.add(a.lock("job").acquireAsync(LONG));
        }
        assertThat(server.queue("job"))
                .as("local waiters stay out of the backend")
                .hasSize(2);

        List<String> order = new ArrayList<>();
        long lastToken = first.fencingToken();
        assertThat(lastToken % 1024).isZero();
        first.close();
        for (int i = 0; i < 3; i++) { // three local hand-offs, each token one higher
            Lease l = fromA.get(i).get(5, TimeUnit.SECONDS);
            assertThat(fromB).isNotDone();
            assertThat(l.fencingToken()).isEqualTo(lastToken + 1);
            lastToken = l.fencingToken();
            order.add("a" + i);
            l.close();
        }
        Lease lb = fromB.get(5, TimeUnit.SECONDS); // the bound: back to the backend, where b waits first
        order.add("b");
        assertThat(lb.fencingToken()).isGreaterThan(lastToken);
        assertThat(fromA.get(3)).isNotDone();
        lastToken = lb.fencingToken();
        lb.close();
        for (int i = 3; i < 5; i++) {
            Lease l = fromA.get(i).get(5, TimeUnit.SECONDS);
            assertThat(l.fencingToken()).isGreaterThan(lastToken);
            lastToken = l.fencingToken();
            order.add("a" + i);
            l.close();
        }
        assertThat(order).containsExactly("a0", "a1", "a2", "b", "a3", "a4");
        assertThat(server.totalEntries()).isZero();
    }

    @Test
    void zeroHandOffsStillQueueLocallyButGrantThroughTheBackend() throws Exception {
        LockClient a = client(0);
        Lease first = a.lock("job").acquire();
        CompletableFuture<Lease> second = a.lock("job").acquireAsync(LONG);
        assertThat(server.queue("job")).hasSize(1);
        first.close();
        Lease l = second.get(5, TimeUnit.SECONDS);
        assertThat(l.fencingToken() % 1024).isZero();
        assertThat(server.enqueues.get()).isEqualTo(2);
        l.close();
    }

    @Test
    void localWaiterTimesOut_withoutTouchingTheBackend() throws Exception {
        LockClient a = client(64);
        Lease held = a.lock("job").acquire();
        Future<Optional<Lease>> zero = threads.submit(() -> a.lock("job").tryAcquire(Duration.ZERO));
        Future<Optional<Lease>> timed = threads.submit(() -> a.lock("job").tryAcquire(Duration.ofMillis(100)));
        assertThat(zero.get(5, TimeUnit.SECONDS)).isEmpty();
        assertThat(timed.get(5, TimeUnit.SECONDS)).isEmpty();
        Future<Integer> withLock = threads.submit(() -> a.withLock("job", Duration.ofMillis(20), () -> 1));
        assertThatThrownBy(() -> withLock.get(5, TimeUnit.SECONDS)).cause().isInstanceOf(LockTimeoutException.class);
        assertThat(server.enqueues.get()).isEqualTo(1);
        assertThat(held.isValid()).isTrue();
        held.close();
        assertThat(server.totalEntries()).isZero();
        try (Lease again = a.lock("job").acquire()) { // the queue is not left blocked
            assertThat(again.isValid()).isTrue();
        }
    }

    @Test
    void aLoneHolderMakesNoQueue_aSecondArrivalMakesOne_andBothEndWithNothingLeft() throws Exception {
        LockClient a = client(64);
        LocalQueues local = ((EngineClient) a).local;
        Lease first = a.lock("job").acquire();
        assertThat(local.size()).isEqualTo(1);
        assertThat(local.hasQueue("job")).isFalse();
        Acquisition granted = ((EngineLease) first).acquisition();
        assertThat(granted.outcome().getNow(null)).isSameAs(granted); // dropped, still answers
        // A lone carrier is a flag of its registry entry, not an entry of a map of the local queues.
        assertThat(granted.registered & Registry.CARRIER).isNotZero();
        CompletableFuture<Lease> second = a.lock("job").acquireAsync(LONG);
        eventually().until(() -> local.hasQueue("job") && ((EngineClient) a).liveCount() == 2);
        assertThat(granted.registered & Registry.CARRIER)
                .as("the queue's carrier now")
                .isZero();
        assertThat(local.size()).isEqualTo(1);
        assertThat(second).isNotDone();
        long token = first.fencingToken();
        first.close();
        Lease next = second.get(5, TimeUnit.SECONDS);
        assertThat(next.fencingToken()).isEqualTo(token + 1); // handed off locally through the queue
        // A lease reads its token from its own acquisition: the hand-off leaves the closed one's alone.
        assertThat(first.fencingToken()).isEqualTo(token);
        assertThat(server.totalEntries()).isEqualTo(1);
        next.close();
        assertThat(server.totalEntries()).isZero();
        assertThat(local.size()).isZero();
        assertThat(((EngineClient) a).liveCount()).isZero();
        try (Lease again = a.lock("job").acquire()) { // a lone carrier again, no queue
            assertThat(local.hasQueue("job")).isFalse();
            assertThat(again.fencingToken()).isGreaterThan(next.fencingToken());
        }
        assertThat(local.size()).isZero();
    }

    @Test
    void tryAgainRightAfterAFailedTry_isNotQueuedBehindTheWithdrawnAttempt() throws Exception {
        LockClient a = client(64);
        LockClient b = client(64);
        for (int i = 0; i < 2_000; i++) {
            Lease held = b.lock("job").acquire();
            assertThat(a.lock("job").tryAcquire(Duration.ZERO)).isEmpty();
            held.close();
            // The failed try's entry is withdrawn before it returned; the JVM's local queue must
            // know it too, or this try waits behind an acquisition that no longer exists.
            Optional<Lease> next = a.lock("job").tryAcquire(Duration.ZERO);
            assertThat(next).as("try %d after the holder released", i).isPresent();
            next.get().close();
        }
    }

    @Test
    void cancelledAndInterruptedLocalWaitersAreSkipped() throws Exception {
        LockClient a = client(64);
        Lease held = a.lock("job").acquire();
        CompletableFuture<Lease> cancelled = a.lock("job").acquireAsync(LONG);
        Future<Lease> interrupted = threads.submit(() -> a.lock("job").acquire());
        CompletableFuture<Lease> last = a.lock("job").acquireAsync(LONG);
        eventually().until(() -> ((EngineClient) a).liveCount() == 4);
        cancelled.cancel(true);
        interrupted.cancel(true);
        assertThatThrownBy(() -> interrupted.get(5, TimeUnit.SECONDS))
                .isInstanceOf(java.util.concurrent.CancellationException.class);
        eventually().until(() -> ((EngineClient) a).liveCount() == 2);
        long token = held.fencingToken();
        held.close();
        Lease l = last.get(5, TimeUnit.SECONDS);
        assertThat(l.fencingToken()).isEqualTo(token + 1);
        l.close();
        assertThat(server.totalEntries()).isZero();
        assertThat(((EngineClient) a).local.size()).isZero();
    }

    @Test
    void lostCarrier_nextLocalWaiterQueuesInTheBackend() throws Exception {
        InMemoryBackend backend = server.connect();
        LockClient a = client(backend, 64);
        Lease held = a.lock("job").acquire();
        CompletableFuture<Lease> waiter = a.lock("job").acquireAsync(LONG);
        assertThat(server.queue("job")).hasSize(1);
        backend.emit(ConnectionState.LOST);
        assertThat(held.isValid()).isFalse();
        // The waiter now stands in the backend behind the lost entry, not behind the local owner.
        eventually().until(() -> server.queue("job").size() == 2);
        assertThat(waiter).isNotDone();
        held.close(); // cleans up the lost entry
        Lease l = waiter.get(5, TimeUnit.SECONDS);
        assertThat(l.fencingToken()).isGreaterThan(held.fencingToken());
        l.close();
        assertThat(server.totalEntries()).isZero();
    }

    @Test
    void closingTheClientFailsLocalWaiters() throws Exception {
        LockClient a = client(64);
        a.lock("job").acquire();
        CompletableFuture<Lease> waiter = a.lock("job").acquireAsync(LONG);
        a.close();
        assertThatThrownBy(() -> waiter.get(5, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOf(IllegalStateException.class);
        assertThat(server.totalEntries()).isZero();
    }

    @Test
    void offEveryWaiterStandsInTheBackend() throws Exception {
        LockClient a = LockEngine.newClient(
                server.connect(),
                LockOptions.builder().ticker(ticker).localQueueing(false).build());
        clients.add(a);
        Lease held = a.lock("job").acquire();
        List<CompletableFuture<Lease>> waiters = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            waiters.add(a.lock("job").acquireAsync(LONG));
        }
        eventually().until(() -> server.queue("job").size() == 4);
        held.close();
        while (!waiters.isEmpty()) { // in grant order (concurrent enqueues may arrive in any order)
            eventually().until(() -> waiters.stream().anyMatch(CompletableFuture::isDone));
            CompletableFuture<Lease> w = waiters.stream()
                    .filter(CompletableFuture::isDone)
                    .findFirst()
                    .orElseThrow();
            waiters.remove(w);
            Lease l = w.get();
            assertThat(l.fencingToken() % 1024).isZero();
            l.close();
        }
        assertThat(server.enqueues.get()).isEqualTo(4);
    }

    @Test
    void optionsRejectOutOfRangeBound() {
        assertThatThrownBy(() -> LockOptions.builder().maxLocalHandoffs(-1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxLocalHandoffs");
        assertThatThrownBy(() -> LockOptions.builder().maxLocalHandoffs(1024))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1023");
    }
}
