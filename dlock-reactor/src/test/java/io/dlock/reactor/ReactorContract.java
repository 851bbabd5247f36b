package io.dlock.reactor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.DistributedLock;
import io.dlock.DistributedSemaphore;
import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockTimeoutException;
import io.dlock.core.Diagnostics;
import io.dlock.spi.LockSnapshot;
import io.dlock.testkit.FaultProxy;
import io.dlock.testkit.LockFixtureSupport;
import io.dlock.testkit.Timing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.reactivestreams.Subscription;
import reactor.core.Disposable;
import reactor.core.publisher.BaseSubscriber;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.test.StepVerifier;

/**
 * What {@link ReactorLocks} must do on a real server; each backend's IT says how to reach it. The
 * server's own records (through the backend's inspector) tell whether a cancelled subscription left
 * an entry behind, and after each test every client is closed and the namespace must be empty.
 */
abstract class ReactorContract extends LockFixtureSupport {

    /** A URI for this test's namespace that reaches the server through {@code port} (a proxy). */
    abstract String uriVia(int port, String query);

    /** The port the server listens on. */
    abstract int serverPort();

    static Duration scaled(long seconds) {
        return Timing.scale(Duration.ofSeconds(seconds));
    }

    private LockClient observer;

    /** Holders and waiters of {@code name} (any kind) as the server records them. */
    @Override
    public List<String> entries(String name) {
        if (observer == null) {
            observer = client();
        }
        List<String> keys = new ArrayList<>();
        for (LockSnapshot s : Diagnostics.inspector(observer).orElseThrow().inspect(name)) {
            if (s.name().equals(name)) {
                s.holders().forEach(e -> keys.add(e.key()));
                s.waiters().forEach(e -> keys.add(e.key()));
            }
        }
        return keys;
    }

    @AfterEach
    void closeClientsAndCheckClean() throws Exception {
        closeTracked();
        observer = null;
        try (LockClient fresh = LockClient.connect(uri(patient()))) {
            assertThat(Diagnostics.inspector(fresh).orElseThrow().inspect(""))
                    .as("locks left in the test's namespace")
                    .isEmpty();
        }
    }

    @Test
    void acquire_isLazy_eachSubscriptionIsOneAttempt() {
        DistributedLock lock = client().lock("lazy");
        Mono<Lease> once = ReactorLocks.acquire(lock, Duration.ZERO);
        assertThat(entries("lazy")).as("nothing before subscription").isEmpty();

        AtomicReference<Lease> first = new AtomicReference<>();
        StepVerifier.create(once)
                .assertNext(lease -> {
                    assertThat(lease.isValid()).isTrue();
                    first.set(lease);
                })
                .expectComplete()
                .verify(scaled(10));
        assertThat(entries("lazy")).hasSize(1);
        // A second subscription is a new attempt: async leases are not reentrant, so it finds the lock held.
        StepVerifier.create(once)
                .expectErrorSatisfies(e -> assertThat(e)
                        .isInstanceOf(LockTimeoutException.class)
                        .hasMessageContaining("lock 'lazy' on " + backendName()))
                .verify(scaled(10));
        assertThat(entries("lazy")).hasSize(1);
        StepVerifier.create(ReactorLocks.release(first.get())).expectComplete().verify(scaled(10));
        assertThat(first.get().isValid()).isFalse();
        StepVerifier.create(once.flatMap(l -> ReactorLocks.release(l).thenReturn(l.fencingToken())))
                .assertNext(token -> assertThat(token).isGreaterThan(first.get().fencingToken()))
                .expectComplete()
                .verify(scaled(10));
    }

    @Test
    void acquire_heldElsewhere_failsWithTimeoutAndLeavesNoEntry() throws Exception {
        try (Lease held = client().lock("busy").acquire()) {
            DistributedLock other = client().lock("busy");
            long start = System.nanoTime();
            StepVerifier.create(ReactorLocks.acquire(other, Duration.ofMillis(300)))
                    .expectError(LockTimeoutException.class)
                    .verify(scaled(10));
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(300));
            await().atMost(scaled(5)).until(() -> entries("busy").size() == 1);
            assertThat(held.isValid()).isTrue();
        }
    }

    @Test
    void acquire_cancelledWhileQueued_withdrawsEntry_nextClientGetsItAtOnce() throws Exception {
        LockClient waiterClient = client();
        Lease held = client().lock("queue").acquire();
        List<Lease> received = new CopyOnWriteArrayList<>();
        Disposable waiting = ReactorLocks.acquire(waiterClient.lock("queue"), Duration.ofMinutes(1))
                .subscribe(received::add);
        await().atMost(scaled(5)).until(() -> entries("queue").size() == 2);

        waiting.dispose();
        await().atMost(scaled(5)).until(() -> entries("queue").size() == 1);
        held.close();
        // Had the cancelled waiter stayed in the queue, it would be granted next and a zero wait would fail.
        Optional<Lease> third = client().lock("queue").tryAcquire(Duration.ZERO);
        assertThat(third).isPresent();
        third.get().close();
        assertThat(received).isEmpty();
    }

    @Test
    void acquire_cancelledBeforeRequest_grantedLeaseIsReleased() {
        // The grant comes while the subscriber has not requested yet; the cancel must release it.
        for (int round = 0; round < 5; round++) {
            AtomicReference<Subscription> subscription = new AtomicReference<>();
            List<Lease> received = new CopyOnWriteArrayList<>();
            ReactorLocks.acquire(client().lock("unrequested"), Duration.ofSeconds(10))
                    .subscribe(new BaseSubscriber<Lease>() {
                        @Override
                        protected void hookOnSubscribe(Subscription s) {
                            subscription.set(s); // no request
                        }

                        @Override
                        protected void hookOnNext(Lease lease) {
                            received.add(lease);
                        }
                    });
            await().atMost(scaled(5)).until(() -> entries("unrequested").size() == 1);
            subscription.get().cancel();
            await().atMost(scaled(5)).until(() -> entries("unrequested").isEmpty());
            assertThat(received).isEmpty();
        }
    }

    @Test
    void acquire_cancelRacesTheGrant_noLeaseLeftBehind() throws Exception {
        LockClient holderClient = client();
        LockClient waiterClient = client();
        AtomicInteger emitted = new AtomicInteger();
        for (int round = 0; round < 30; round++) {
            Lease held = holderClient.lock("race").acquire();
            List<Lease> received = new CopyOnWriteArrayList<>();
            // Not subscribe(received::add): a lambda subscriber drops a value that lands as it is disposed
            // (Reactor's onNextDropped), which would hide a lease the Mono did emit.
            BaseSubscriber<Lease> waiting = new BaseSubscriber<>() {
                @Override
                protected void hookOnNext(Lease lease) {
                    received.add(lease);
                }
            };
            ReactorLocks.acquire(waiterClient.lock("race"), Duration.ofMinutes(1))
                    .subscribe(waiting);
            await().atMost(scaled(5)).until(() -> entries("race").size() == 2);
            // The release and the cancel run at once: the cancel from half a millisecond before the release
            // is sent to five after, around the moment the grant reaches the waiter.
            long skew = ThreadLocalRandom.current().nextLong(-500, 5000);
            CompletableFuture<Void> cancel = CompletableFuture.runAsync(() -> {
                if (skew > 0) {
                    spin(skew);
                }
                waiting.dispose();
            });
            if (skew < 0) {
                spin(-skew);
            }
            var unused = held.closeAsync();
            cancel.get(10, TimeUnit.SECONDS);
            // A grant that won the race may still be on its way to the subscriber when dispose returns:
            // either it arrives, or the Mono released it and the entries go.
            await().atMost(scaled(5))
                    .until(() -> !received.isEmpty() || entries("race").isEmpty());
            // A lease the subscriber did receive (it won the race) is the subscriber's to close.
            for (Lease lease : received) {
                emitted.incrementAndGet();
                lease.close();
            }
            await().atMost(scaled(5)).until(() -> entries("race").isEmpty());
        }
        Optional<Lease> after = client().lock("race").tryAcquire(Duration.ZERO);
        assertThat(after).isPresent();
        after.get().close();
        System.out.printf("%s: cancel race, %d of 30 rounds emitted before the cancel%n", backendName(), emitted.get());
    }

    private static void spin(long micros) {
        long end = System.nanoTime() + micros * 1000;
        while (System.nanoTime() < end) {
            Thread.onSpinWait();
        }
    }

    @Test
    void withLock_concurrentSubscriptions_oneInsideAtATime_tokensRise() {
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger maxInside = new AtomicInteger();
        List<Long> tokens = Collections.synchronizedList(new ArrayList<>());
        List<Flux<Long>> workers = new ArrayList<>();
        for (int c = 0; c < 3; c++) {
            DistributedLock lock = client().lock("counter");
            for (int i = 0; i < 4; i++) {
                workers.add(ReactorLocks.withLock(lock, Duration.ofMinutes(1), lease -> Mono.fromCallable(() -> {
                            maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                            tokens.add(lease.fencingToken());
                            return lease.fencingToken();
                        })
                        .delayElement(Duration.ofMillis(20))
                        // Before the completion: the release (and a local hand-off) follows it at once.
                        .doOnNext(t -> inside.decrementAndGet())));
            }
        }
        StepVerifier.create(Flux.merge(workers))
                .expectNextCount(12)
                .expectComplete()
                .verify(scaled(60));
        assertThat(maxInside).hasValue(1);
        assertThat(tokens).hasSize(12).isSorted().doesNotHaveDuplicates();
        assertThat(entries("counter")).isEmpty();
    }

    @Test
    void withLock_completes_releasedBeforeCompletionIsSignalled() throws Exception {
        DistributedLock lock = client().lock("done");
        DistributedLock other = client().lock("done");
        for (int i = 0; i < 3; i++) {
            StepVerifier.create(ReactorLocks.withLock(lock, scaled(5), lease -> Flux.just(1, 2, 3)))
                    .expectNext(1, 2, 3)
                    .expectComplete()
                    .verify(scaled(10));
            // The completion came after the backend confirmed the release: the lock is free at once.
            Optional<Lease> next = other.tryAcquire(Duration.ZERO);
            assertThat(next).isPresent();
            next.get().close();
        }
    }

    @Test
    void withLock_actionFails_releasesThenPropagatesTheError() throws Exception {
        DistributedLock lock = client().lock("failing");
        DistributedLock other = client().lock("failing");
        AtomicReference<Lease> seen = new AtomicReference<>();
        StepVerifier.create(ReactorLocks.withLock(lock, scaled(5), lease -> {
                    seen.set(lease);
                    return Mono.error(new IllegalStateException("boom"));
                }))
                .expectErrorMessage("boom")
                .verify(scaled(10));
        assertThat(seen.get().isValid()).isFalse();
        Optional<Lease> next = other.tryAcquire(Duration.ZERO);
        assertThat(next).isPresent();
        next.get().close();

        // An action that throws instead of returning a failed publisher: the same.
        StepVerifier.create(ReactorLocks.withLock(lock, scaled(5), lease -> {
                    seen.set(lease);
                    throw new IllegalArgumentException("thrown");
                }))
                .expectErrorMessage("thrown")
                .verify(scaled(10));
        assertThat(seen.get().isValid()).isFalse();
        await().atMost(scaled(5)).until(() -> entries("failing").isEmpty());
    }

    @Test
    void withLock_cancelledWhileRunning_releases() throws Exception {
        DistributedLock lock = client().lock("running");
        AtomicReference<Lease> seen = new AtomicReference<>();
        Disposable running = ReactorLocks.withLock(lock, scaled(5), lease -> {
                    seen.set(lease);
                    return Flux.never();
                })
                .subscribe();
        await().atMost(scaled(5)).until(() -> seen.get() != null);
        assertThat(entries("running")).hasSize(1);
        running.dispose();
        await().atMost(scaled(5))
                .until(() -> !seen.get().isValid() && entries("running").isEmpty());
        Optional<Lease> next = client().lock("running").tryAcquire(Duration.ZERO);
        assertThat(next).isPresent();
        next.get().close();
    }

    @Test
    void withLock_cancelledWhileWaiting_neverRunsAndLeavesNoEntry() throws Exception {
        try (Lease held = client().lock("never").acquire()) {
            AtomicInteger runs = new AtomicInteger();
            StepVerifier.create(ReactorLocks.withLock(client().lock("never"), Duration.ofMinutes(1), lease -> {
                        runs.incrementAndGet();
                        return Mono.just(1);
                    }))
                    .expectSubscription()
                    .then(() -> await().atMost(scaled(5))
                            .until(() -> entries("never").size() == 2))
                    .thenCancel()
                    .verify(scaled(10));
            await().atMost(scaled(5)).until(() -> entries("never").size() == 1);
            assertThat(runs).hasValue(0);
            assertThat(held.isValid()).isTrue();
        }
    }

    @Test
    void semaphore_permits_acquireTimesOutThenWithPermitsBoundsConcurrency() throws Exception {
        DistributedSemaphore first = client().semaphore("pool", 3);
        DistributedSemaphore second = client().semaphore("pool", 3);
        AtomicReference<Lease> two = new AtomicReference<>();
        StepVerifier.create(ReactorLocks.acquire(first, 2, scaled(5)))
                .consumeNextWith(two::set)
                .expectComplete()
                .verify(scaled(10));
        StepVerifier.create(ReactorLocks.acquire(second, 2, Duration.ofMillis(300)))
                .expectError(LockTimeoutException.class)
                .verify(scaled(10));
        StepVerifier.create(ReactorLocks.acquire(second, 1, Duration.ZERO).flatMap(ReactorLocks::release))
                .expectComplete()
                .verify(scaled(10));
        two.get().close();

        AtomicInteger inside = new AtomicInteger();
        AtomicInteger maxInside = new AtomicInteger();
        List<Flux<Integer>> workers = new ArrayList<>();
        for (int c = 0; c < 3; c++) {
            DistributedSemaphore s = client().semaphore("pool", 3);
            for (int i = 0; i < 3; i++) {
                workers.add(ReactorLocks.withPermits(s, 2, Duration.ofMinutes(1), lease -> Mono.fromCallable(
                                () -> maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max))
                        .delayElement(Duration.ofMillis(10))
                        .doOnNext(n -> inside.decrementAndGet())));
            }
        }
        StepVerifier.create(Flux.merge(workers))
                .expectNextCount(9)
                .expectComplete()
                .verify(scaled(60));
        // Two permits each out of three: never two holders at once.
        assertThat(maxInside).hasValue(1);
    }

    @Test
    void semaphore_cancelledWhileQueued_withdrawsEntry() throws Exception {
        DistributedSemaphore holder = client().semaphore("sem-cancel", 2);
        DistributedSemaphore waiter = client().semaphore("sem-cancel", 2);
        try (Lease all = holder.acquire(2)) {
            Disposable waiting =
                    ReactorLocks.acquire(waiter, 1, Duration.ofMinutes(1)).subscribe();
            await().atMost(scaled(5)).until(() -> entries("sem-cancel").size() == 2);
            waiting.dispose();
            await().atMost(scaled(5)).until(() -> entries("sem-cancel").size() == 1);
            assertThat(all.isValid()).isTrue();
        }
        try (Lease again = holder.tryAcquire(2, Duration.ZERO).orElseThrow()) {
            assertThat(again.isValid()).isTrue();
        }
    }

    @Test
    void badInput_throwsAtTheCallAndStartsNothing() {
        DistributedLock lock = client().lock("bad");
        DistributedSemaphore semaphore = client().semaphore("bad-sem", 2);
        assertThatThrownBy(() -> ReactorLocks.acquire(lock, Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("PT-1S");
        assertThatThrownBy(() -> ReactorLocks.acquire(semaphore, 3, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("bad-sem");
        assertThatThrownBy(() -> ReactorLocks.acquire(semaphore, 0, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ReactorLocks.withLock(lock, Duration.ZERO, null))
                .isInstanceOf(NullPointerException.class);
        assertThat(entries("bad")).isEmpty();
        assertThat(entries("bad-sem")).isEmpty();
    }

    @Test
    void acquire_closedClient_failsTheSubscription() {
        LockClient closed = LockClient.connect(uri(patient()));
        DistributedLock lock = closed.lock("closed");
        Mono<Lease> acquire = ReactorLocks.acquire(lock, Duration.ZERO);
        closed.close();
        StepVerifier.create(acquire).expectError(IllegalStateException.class).verify(scaled(10));
    }

    @Test
    void acquire_backendDown_failsWithLockBackendException() throws Exception {
        try (FaultProxy proxy = FaultProxy.start(serverPort());
                LockClient client = LockClient.connect(uriVia(proxy.port(), "connectTimeout=1s"))) {
            DistributedLock lock = client.lock("down");
            StepVerifier.create(ReactorLocks.acquire(lock, Duration.ZERO).flatMap(ReactorLocks::release))
                    .expectComplete()
                    .verify(scaled(10));

            proxy.refuse();
            proxy.resetConnections();
            long start = System.nanoTime();
            // Unreachable is not busy: the subscriber sees a backend failure, never a timeout.
            StepVerifier.create(ReactorLocks.withLock(lock, scaled(5), lease -> Mono.just(1)))
                    .expectErrorSatisfies(e -> assertThat(e)
                            .isInstanceOf(LockBackendException.class)
                            .hasMessageContaining("lock 'down' on " + backendName()))
                    .verify(scaled(30));
            System.out.printf(
                    "%s: backend down reported after %d ms%n",
                    backendName(), Duration.ofNanos(System.nanoTime() - start).toMillis());
            proxy.pass();
        }
    }
}
