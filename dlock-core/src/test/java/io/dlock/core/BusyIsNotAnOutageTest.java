package io.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.LockTimeoutException;
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
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Unreachable is not busy, and busy is not unreachable: on a healthy backend a zero-wait attempt on
 * a held lock is an empty {@code Optional} or a {@link LockTimeoutException}, never a {@link
 * LockBackendException}, however it interleaves with the local queue's hand-offs, promotions and
 * cancellations. Over {@link InMemoryBackend}, with the real ticker (the races need real timers).
 */
class BusyIsNotAnOutageTest {
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

    private LockClient client(InMemoryBackend backend, LockOptions.Builder options) {
        LockClient c = LockEngine.newClient(backend, options.build());
        clients.add(c);
        return c;
    }

    private static ConditionFactory eventually() {
        return await().atMost(Duration.ofSeconds(5)).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(2));
    }

    /**
     * Eight threads of one client make zero-wait attempts ({@code tryAcquire} and {@code
     * acquireAsync}, alternately) on one lock while two threads of a second client contend for it
     * and hold it briefly. Every attempt is a grant or "busy"; the grants never overlap.
     */
    @ParameterizedTest(name = "localQueueing={0}")
    @ValueSource(booleans = {true, false})
    void zeroWaitAttempts_busyLockOnHealthyBackend_neverReportBackendFailure(boolean localQueueing) throws Exception {
        LockOptions.Builder options =
                LockOptions.builder().localQueueing(localQueueing).callbackThreads(2);
        LockClient mine = client(server.connect(), options);
        LockClient other = client(server.connect(), options);
        int threadsOfMine = 8;
        int perThread = 400;
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        AtomicInteger granted = new AtomicInteger();
        AtomicInteger busy = new AtomicInteger();
        int[] counter = {0}; // guarded by the lock under test
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        AtomicBoolean stop = new AtomicBoolean();

        List<Future<?>> contenders = new ArrayList<>();
        for (int t = 0; t < 2; t++) {
            contenders.add(threads.submit(() -> {
                while (!stop.get()) {
                    try {
                        Optional<Lease> l = other.lock("busy").tryAcquire(Duration.ofMillis(2));
                        if (l.isPresent()) {
                            try (Lease held = l.get()) {
                                critical(inside, overlaps, counter);
                                granted.incrementAndGet();
                            }
                        }
                    } catch (RuntimeException e) {
                        failures.add(e);
                    }
                }
                return null;
            }));
        }
        List<Future<?>> done = new ArrayList<>();
        for (int t = 0; t < threadsOfMine; t++) {
            done.add(threads.submit(() -> {
                for (int i = 0; i < perThread; i++) {
                    try {
                        Optional<Lease> got;
                        if (i % 2 == 0) {
                            got = mine.lock("busy").tryAcquire(Duration.ZERO);
                        } else {
                            try {
                                got = Optional.of(mine.lock("busy")
                                        .acquireAsync(Duration.ZERO)
                                        .get(10, TimeUnit.SECONDS));
                            } catch (ExecutionException e) {
                                if (!(e.getCause() instanceof LockTimeoutException)) {
                                    throw e.getCause();
                                }
                                got = Optional.empty();
                            }
                        }
                        if (got.isPresent()) {
                            try (Lease held = got.get()) {
                                critical(inside, overlaps, counter);
                                granted.incrementAndGet();
                            }
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
        for (Future<?> f : done) {
            f.get(60, TimeUnit.SECONDS);
        }
        stop.set(true);
        for (Future<?> f : contenders) {
            f.get(10, TimeUnit.SECONDS);
        }

        assertThat(failures)
                .as("a busy lock on a healthy backend is busy, not a backend failure")
                .isEmpty();
        assertThat(overlaps.get()).isZero();
        assertThat(counter[0]).isEqualTo(granted.get());
        assertThat(busy.get()).as("the lock was contended").isPositive();
        eventually().until(() -> server.totalEntries() == 0);
    }

    private static void critical(AtomicInteger inside, AtomicInteger overlaps, int[] counter) {
        if (inside.incrementAndGet() != 1) {
            overlaps.incrementAndGet();
        }
        counter[0]++;
        Thread.yield(); // hold it briefly, so that others find it busy
        inside.decrementAndGet();
    }

    /**
     * An attempt whose own wait ended while its enqueue was still in flight (here: the caller
     * cancelled it) stays this JVM's carrier until the reply comes and the entry is withdrawn. A
     * healthy backend answers; a zero-wait attempt behind it meanwhile finds the lock busy.
     */
    @Test
    void zeroWaitBehindACarrierCancelledWithItsRequestInFlight_isBusyNotAnOutage() throws Exception {
        InMemoryBackend backend = server.connect();
        LockClient a = client(backend, LockOptions.builder().callbackThreads(1));
        LockClient b = client(server.connect(), LockOptions.builder().callbackThreads(1));
        Lease held = b.lock("job").acquire();
        backend.holdEnqueueReplies(true); // the reply is slow, not lost
        CompletableFuture<Lease> carrier = a.lock("job").acquireAsync(Duration.ofMinutes(1));
        eventually().until(() -> backend.heldReplies() == 1);
        carrier.cancel(true);

        assertThat(a.lock("job").tryAcquire(Duration.ZERO)).isEmpty();
        assertThat(a.lock("job").acquireAsync(Duration.ZERO))
                .failsWithin(Duration.ofSeconds(5))
                .withThrowableOfType(ExecutionException.class)
                .withCauseInstanceOf(LockTimeoutException.class);

        backend.holdEnqueueReplies(false);
        backend.deliverHeldReplies();
        eventually().until(() -> server.queue("job").size() == 1); // the cancelled one's entry went
        eventually().until(() -> ((EngineClient) a).local.size() == 0); // and so did the carrier
        held.close();
        try (Lease next = a.lock("job").tryAcquire(Duration.ZERO).orElseThrow()) {
            assertThat(next.isValid()).isTrue();
        }
        eventually().until(() -> server.totalEntries() == 0);
    }

    /**
     * The case the outage answer is for: this JVM's carrier gave up on a request the backend has
     * not answered within the wait plus connectTimeout. Whether anyone holds the lock is unknown, so
     * a zero-wait attempt behind it is an outage too, until the reply comes.
     */
    @Test
    void zeroWaitBehindACarrierWhoseRequestWentUnanswered_isAnOutage() throws Exception {
        InMemoryBackend backend = server.connect();
        LockClient a = client(backend, LockOptions.builder().callbackThreads(1).connectTimeout(Duration.ofMillis(300)));
        backend.holdEnqueueReplies(true); // a partition: the reply does not come back

        assertThatThrownBy(() -> a.lock("job").tryAcquire(Duration.ofMillis(100)))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("no answer from inmemory://server/session-");
        assertThatThrownBy(() -> a.lock("job").tryAcquire(Duration.ZERO))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("still unanswered");
        assertThat(a.lock("job").acquireAsync(Duration.ZERO))
                .failsWithin(Duration.ofSeconds(5))
                .withThrowableOfType(ExecutionException.class)
                .withCauseInstanceOf(LockBackendException.class);

        backend.holdEnqueueReplies(false);
        backend.deliverHeldReplies();
        eventually().until(() -> server.totalEntries() == 0); // the late reply withdraws the grant
        eventually().until(() -> ((EngineClient) a).local.size() == 0);
        try (Lease next = a.lock("job").tryAcquire(Duration.ZERO).orElseThrow()) {
            assertThat(next.isValid()).isTrue();
        }
    }
}
