package io.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Capability;
import io.dlock.DistributedReadWriteLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.LockOptions;
import io.dlock.spi.ConnectionState;
import io.dlock.spi.LockMode;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Interleavings and inputs a hostile caller can produce and the other engine tests do not: a
 * client closed between two parts of an asynchronous multi-lock, a listener added while a loss is
 * being recorded, an unlock of a multi-lock the thread never locked, a read-write lock asked for
 * over this thread's own lost lease. Over {@link InMemoryBackend}, on real time.
 */
class EngineEdgeCaseTest {
    private static final Set<Capability> ALL = with(Capability.MULTI_LOCK, Capability.READ_WRITE);

    private static Set<Capability> with(Capability... more) {
        EnumSet<Capability> all = EnumSet.copyOf(InMemoryBackend.DEFAULT_CAPABILITIES);
        all.addAll(List.of(more));
        return Set.copyOf(all);
    }

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

    private LockClient open() {
        return open(server.connect(ALL));
    }

    private LockClient open(InMemoryBackend backend) {
        LockClient c = LockEngine.newClient(
                backend, LockOptions.builder().callbackThreads(1).build());
        clients.add(c);
        return c;
    }

    private static ConditionFactory eventually() {
        return await().atMost(Duration.ofSeconds(5)).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(5));
    }

    /** {@code f} stays not done for 300 ms (it would be done at once without the fix). */
    private static void stillPending(Future<?> f) {
        await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(1)).until(() -> !f.isDone());
    }

    private static Acquisition heldByMe(LockClient client, String name, LockMode mode) {
        return ((EngineClient) client).heldBy(name, mode, Thread.currentThread());
    }

    @Test
    void close_betweenTwoPartsOfAnAsyncMultiLock_failsItsFuture() throws Exception {
        LockClient c = open();
        EngineClient engine = (EngineClient) c;
        // The first part's grant reaches the multi-lock on the (only) callback thread: keep that
        // thread busy until the client is closing, so the second part is asked of a closed client.
        CountDownLatch busy = new CountDownLatch(1);
        CountDownLatch free = new CountDownLatch(1);
        Future<?> blocker = engine.callbacks.submit(() -> {
            busy.countDown();
            free.await();
            return null;
        });
        assertThat(busy.await(5, TimeUnit.SECONDS)).isTrue();

        CompletableFuture<Lease> multi = c.multiLock(List.of("a", "b")).acquireAsync(Duration.ofMinutes(1));
        eventually().until(() -> engine.heldCount() == 1); // part a granted, its callback queued
        Future<?> closing = threads.submit(c::close);
        eventually().until(() -> !engine.isOpen());
        free.countDown();
        blocker.get(5, TimeUnit.SECONDS);

        assertThatThrownBy(() -> multi.get(5, TimeUnit.SECONDS))
                .as("the multi-lock's future, after its client closed between its parts")
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        closing.get(5, TimeUnit.SECONDS);
        eventually().until(() -> server.totalEntries() == 0);
    }

    /**
     * A lease's loss is counted (its metric) between its move to LOST and the recording of its
     * cause; the counter here adds a listener at that moment, as another thread could.
     */
    @Test
    void onLost_addedWhileTheLossIsBeingRecorded_isCalledOnceWithItsCause() throws Exception {
        AtomicReference<Runnable> onLostCounted = new AtomicReference<>(() -> {});
        MeterRegistry registry = new SimpleMeterRegistry() {
            @Override
            protected Counter newCounter(Meter.Id id) {
                Counter real = super.newCounter(id);
                if (!id.getName().equals(io.dlock.LockMetricNames.LEASE_LOST)) {
                    return real;
                }
                return new Counter() {
                    @Override
                    public void increment(double amount) {
                        onLostCounted.get().run();
                        real.increment(amount);
                    }

                    @Override
                    public double count() {
                        return real.count();
                    }

                    @Override
                    public Meter.Id getId() {
                        return real.getId();
                    }
                };
            }
        };
        LockClient c = LockEngine.newClient(
                server.connect(ALL),
                LockOptions.builder()
                        .callbackThreads(1)
                        .metricsRegistry(registry)
                        .build());
        clients.add(c);
        Lease lease = c.lock("x").acquire();
        Acquisition a = heldByMe(c, "x", LockMode.EXCLUSIVE);
        List<Optional<LockLostException>> calls = new CopyOnWriteArrayList<>();
        onLostCounted.set(() -> lease.onLost(e -> calls.add(Optional.ofNullable(e))));

        a.lose(LockMetrics.LossCause.REMOVED, "lost for the test", null);

        eventually().until(() -> !calls.isEmpty());
        // A second call would come from the listener thread: none within 100 ms.
        await().during(Duration.ofMillis(100)).atMost(Duration.ofSeconds(1)).until(() -> calls.size() == 1);
        assertThat(calls.get(0))
                .as("the cause given to a listener added while the loss was recorded")
                .hasValueSatisfying(e -> assertThat(e).hasMessageContaining("lost for the test"));
    }

    @Test
    void multiLockUnlock_byAThreadHoldingOnlySomeParts_throwsAndReleasesNothing() throws Exception {
        LockClient c = open();
        Lease a = c.lock("a").acquire();
        Lock multi = c.multiLock(List.of("a", "b")).asJavaLock();

        assertThatThrownBy(multi::unlock)
                .isInstanceOf(IllegalMonitorStateException.class)
                .hasMessageContaining("a,b");

        assertThat(a.isValid()).as("the single lock's lease").isTrue();
        assertThat(server.queue("a")).hasSize(1);
        assertThat(open().lock("a").tryAcquire(Duration.ZERO))
                .as("a, from another client")
                .isEmpty();
        a.close();
    }

    @Test
    void writeLock_overThisThreadsLostReadLease_isRefusedAtOnce() throws Exception {
        LockClient c = open();
        DistributedReadWriteLock rw = c.readWriteLock("rw");
        Lease read = rw.readLock().acquire();
        heldByMe(c, "rw", LockMode.READ).lose(LockMetrics.LossCause.REMOVED, "lost for the test", null);

        long start = System.nanoTime();
        assertThatThrownBy(() -> rw.writeLock().tryAcquire(Duration.ofSeconds(10)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("upgrade")
                .hasMessageContaining("lost");
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(5_000);
        assertThat(server.queue("rw")).as("only the lost read's entry").hasSize(1);

        read.close();
        eventually().until(() -> server.queue("rw").isEmpty());
        assertThat(rw.writeLock().tryAcquire(Duration.ofSeconds(5))).isPresent();
    }

    @Test
    void readLock_overThisThreadsLostWriteLease_isRefusedAtOnce() throws Exception {
        LockClient c = open();
        DistributedReadWriteLock rw = c.readWriteLock("rw");
        Lease write = rw.writeLock().acquire();
        heldByMe(c, "rw", LockMode.WRITE).lose(LockMetrics.LossCause.REMOVED, "lost for the test", null);

        long start = System.nanoTime();
        assertThatThrownBy(() -> rw.readLock().tryAcquire(Duration.ofSeconds(10)))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("write lock was lost");
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(5_000);
        assertThat(server.queue("rw")).as("only the lost write's entry").hasSize(1);

        write.close();
        eventually().until(() -> server.queue("rw").isEmpty());
        assertThat(rw.readLock().tryAcquire(Duration.ofSeconds(5))).isPresent();
    }

    /**
     * A local hand-off moves the grant out of HELD (the carrier) and back into it (the waiter): a
     * session loss that scans for HELD grants in between sees neither. The steps are the ones
     * {@code Acquisition.release} takes, with the loss put between them.
     */
    @Test
    void localHandOff_overtakenByASessionLoss_givesTheWaiterALostLease() throws Exception {
        InMemoryBackend backend = server.connect(ALL);
        LockClient c = open(backend);
        EngineClient engine = (EngineClient) c;
        c.lock("x").acquire();
        Future<Lease> waiter = threads.submit(() -> c.lock("x").acquire());
        eventually().until(() -> engine.waitingCount() == 1);
        Acquisition carrier = heldByMe(c, "x", LockMode.EXCLUSIVE);

        assertThat(carrier.transition(LockState.HELD, LockState.RELEASING)).isTrue();
        engine.onEnded(carrier);
        backend.emit(ConnectionState.LOST);
        assertThat(engine.local.handOff(carrier)).as("handed off").isTrue();

        Lease handed = waiter.get(5, TimeUnit.SECONDS);
        assertThat(handed.isValid())
                .as("the lease handed over across the session loss")
                .isFalse();
        assertThatThrownBy(handed::checkValid)
                .isInstanceOf(LockLostException.class)
                .hasMessageContaining("session lost");
    }

    @Test
    void close_waitsForAReleaseAnotherThreadHasInFlight() throws Exception {
        InMemoryBackend backend = server.connect(ALL);
        LockClient c = open(backend);
        Lease lease = c.lock("x").acquireAsync(Duration.ofMinutes(1)).get(5, TimeUnit.SECONDS);
        backend.holdReleases(true);
        Future<?> leaseClosing = threads.submit(lease::close);
        eventually().until(() -> backend.heldReleases() == 1);

        Future<?> clientClosing = threads.submit(c::close);
        // close() must not return while a release by another thread is in flight.
        stillPending(clientClosing);

        backend.deliverHeldReleases();
        clientClosing.get(5, TimeUnit.SECONDS);
        leaseClosing.get(5, TimeUnit.SECONDS);
        assertThat(server.queue("x")).isEmpty();
    }

    @Test
    void close_calledAgainWhileTheFirstWaits_returnsOnlyOnceTheClientIsClosed() throws Exception {
        InMemoryBackend backend = server.connect(ALL);
        LockClient c = open(backend);
        c.lock("x").acquireAsync(Duration.ofMinutes(1)).get(5, TimeUnit.SECONDS);
        backend.holdReleases(true);
        Future<?> first = threads.submit(c::close);
        eventually().until(() -> backend.heldReleases() == 1);

        Future<?> second = threads.submit(c::close);
        stillPending(second); // the second close(), while the first waits for its release

        backend.deliverHeldReleases();
        second.get(5, TimeUnit.SECONDS);
        assertThat(server.queue("x"))
                .as("released when the second close() returned")
                .isEmpty();
        first.get(5, TimeUnit.SECONDS);
        c.close(); // a third, after the first returned: at once
    }

    // Lease.closeAsync(): invalid at once, its stage completes only once the backend applied the release.

    @Test
    void closeAsync_returnsBeforeTheBackendConfirms_andItsStageCompletesWhenItDoes() throws Exception {
        InMemoryBackend backend = server.connect(ALL);
        LockClient client = open(backend);
        Lease lease = client.lock("x").acquire();
        backend.holdReleases(true);

        CompletableFuture<Void> released = lease.closeAsync().toCompletableFuture();

        assertThat(lease.isValid()).isFalse();
        assertThat(client.lock("x").isHeldByCurrentThread()).isFalse();
        await().atMost(Duration.ofSeconds(5)).until(() -> backend.heldReleases() == 1);
        stillPending(released);
        assertThat(server.queue("x"))
                .as("the entry stays until the release is applied")
                .hasSize(1);

        backend.deliverHeldReleases();

        released.get(5, TimeUnit.SECONDS);
        assertThat(server.queue("x")).isEmpty();
        assertThat(lease.closeAsync().toCompletableFuture()).as("closing again").isCompletedWithValue(null);
    }

    @Test
    void closeAsync_stageCompletedByTheCaller_doesNotEndTheRelease() throws Exception {
        InMemoryBackend backend = server.connect(ALL);
        LockClient client = open(backend);
        Lease lease = client.lock("x").acquire();
        backend.holdReleases(true);
        CompletableFuture<Void> released = lease.closeAsync().toCompletableFuture();
        released.complete(null);
        await().atMost(Duration.ofSeconds(5)).until(() -> backend.heldReleases() == 1);

        Future<?> closing = threads.submit(client::close);

        stillPending(closing); // the client still counts the release as in flight
        backend.deliverHeldReleases();
        closing.get(5, TimeUnit.SECONDS);
        assertThat(server.queue("x")).isEmpty();
    }

    @Test
    void closeAsync_ofANestedLease_onlyDropsAHold() throws Exception {
        InMemoryBackend backend = server.connect(ALL);
        LockClient client = open(backend);
        Lease outer = client.lock("x").acquire();
        Lease inner = client.lock("x").acquire();

        assertThat(inner.closeAsync().toCompletableFuture()).isCompletedWithValue(null);

        assertThat(outer.isValid()).isTrue();
        assertThat(client.lock("x").isHeldByCurrentThread()).isTrue();
        assertThat(server.queue("x")).hasSize(1);
        outer.closeAsync().toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertThat(server.queue("x")).isEmpty();
    }

    @Test
    void closeAsync_byAThreadThatDoesNotOwnTheLease_isRefused_andTheLockStaysHeld() throws Exception {
        InMemoryBackend backend = server.connect(ALL);
        LockClient client = open(backend);
        Lease lease = client.lock("x").acquire();
        AtomicReference<Throwable> thrown = new AtomicReference<>();

        threads.submit(() -> {
                    try {
                        lease.closeAsync();
                    } catch (Throwable t) {
                        thrown.set(t);
                    }
                })
                .get(5, TimeUnit.SECONDS);

        assertThat(thrown.get())
                .isInstanceOf(IllegalMonitorStateException.class)
                .hasMessageContaining("'x'");
        assertThat(lease.isValid()).isTrue();
        assertThat(server.queue("x")).hasSize(1);
        lease.closeAsync().toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertThat(server.queue("x")).isEmpty();
    }

    @Test
    void closeAsync_ofAnAsyncLease_fromAnyThread_andOfAMultiLock_releasesEveryPart() throws Exception {
        InMemoryBackend backend = server.connect(ALL);
        LockClient client = open(backend);
        Lease single = client.lock("a").acquireAsync(Duration.ofSeconds(5)).get(5, TimeUnit.SECONDS);
        Lease multi = client.multiLock(List.of("b", "c")).acquire();

        threads.submit(() -> single.closeAsync().toCompletableFuture().join()).get(5, TimeUnit.SECONDS);
        backend.holdReleases(true);
        CompletableFuture<Void> both = multi.closeAsync().toCompletableFuture();
        await().atMost(Duration.ofSeconds(5)).until(() -> backend.heldReleases() == 2);
        stillPending(both);
        backend.deliverHeldReleases();
        both.get(5, TimeUnit.SECONDS);

        assertThat(multi.isValid()).isFalse();
        assertThat(List.of(server.queue("a"), server.queue("b"), server.queue("c")))
                .allSatisfy(q -> assertThat(q).isEmpty());
        assertThatThrownBy(() -> single.checkValid()).hasMessageContaining("closed");
    }
}
