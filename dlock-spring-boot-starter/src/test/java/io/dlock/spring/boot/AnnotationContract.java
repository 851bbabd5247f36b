package io.dlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockTimeoutException;
import io.dlock.spring.boot.actuate.DLockEndpoint;
import io.dlock.spring.boot.annotation.ActiveLocks;
import io.dlock.spring.boot.autoconfigure.DLockAutoConfiguration;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * {@code @DistributedLock} through the auto-configured client on a real server; each backend's IT
 * supplies the server ({@link #backend}). Every test runs in its own namespace, and after it the
 * server must hold nothing of it.
 */
abstract class AnnotationContract {
    static Backend backend;

    String ns;
    private final List<LockClient> others = new ArrayList<>();
    private final ExecutorService pool = Executors.newCachedThreadPool();

    @BeforeEach
    void namespace(TestInfo info) {
        ns = "t-" + info.getTestMethod().orElseThrow().getName();
    }

    @AfterEach
    void closeAndCheckClean() {
        pool.shutdownNow();
        others.forEach(LockClient::close);
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(backend.leftovers(ns))
                .as("left on %s under %s", backend.name(), ns)
                .isEmpty());
    }

    ApplicationContextRunner runner(Orders.Counter counter) {
        return new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DLockAutoConfiguration.class))
                .withPropertyValues("dlock.uri=" + backend.uri(ns))
                .withBean(Orders.Counter.class, () -> counter)
                .withBean("keys", Orders.Keys.class, Orders.Keys::new)
                .withBean(Orders.class);
    }

    /** A second client, as another application would have. */
    LockClient otherClient() {
        LockClient c = LockClient.connect(backend.uri(ns));
        others.add(c);
        return c;
    }

    @Test
    void annotatedMethod_sameKeyFromTwoContexts_serializesExactly() {
        Orders.Counter counter = new Orders.Counter();
        runner(counter).run(a -> runner(counter).run(b -> {
            List<Future<?>> calls = new ArrayList<>();
            for (Orders orders : List.of(a.getBean(Orders.class), b.getBean(Orders.class))) {
                for (int t = 0; t < 4; t++) {
                    calls.add(pool.submit(() -> {
                        for (int i = 0; i < 25; i++) {
                            orders.increment(1);
                        }
                    }));
                }
            }
            for (Future<?> f : calls) {
                f.get(60, TimeUnit.SECONDS);
            }
            assertThat(counter.value()).isEqualTo(200);
            assertThat(counter.maxInside()).isEqualTo(1);
        }));
    }

    @Test
    void annotatedMethod_differentKeys_runConcurrently_sameKeyWaits() {
        runner(new Orders.Counter()).run(ctx -> {
            Orders orders = ctx.getBean(Orders.class);
            CountDownLatch go = new CountDownLatch(1);
            CountDownLatch enteredA = new CountDownLatch(1);
            CountDownLatch enteredB = new CountDownLatch(1);
            CountDownLatch enteredA2 = new CountDownLatch(1);
            Future<Long> a = pool.submit(() -> orders.hold("a", enteredA, go));
            assertThat(enteredA.await(10, TimeUnit.SECONDS)).isTrue();
            Future<Long> b = pool.submit(() -> orders.hold("b", enteredB, go));
            assertThat(enteredB.await(10, TimeUnit.SECONDS))
                    .as("other key while 'gate:a' is held")
                    .isTrue();
            Future<Long> a2 = pool.submit(() -> orders.hold("a", enteredA2, go));
            assertThat(enteredA2.await(300, TimeUnit.MILLISECONDS))
                    .as("same key while held")
                    .isFalse();

            ActiveLocks active = ctx.getBean(ActiveLocks.class);
            var view = new DLockEndpoint(active).locks();
            assertThat(entries(view, "held"))
                    .extracting(ActiveLocks.Entry::lockName)
                    .containsExactlyInAnyOrder("gate:a", "gate:b");
            assertThat(entries(view, "held"))
                    .allSatisfy(e -> assertThat(e.fencingToken()).isPositive());
            assertThat(entries(view, "waiting"))
                    .extracting(ActiveLocks.Entry::lockName)
                    .containsExactly("gate:a");

            go.countDown();
            long tokenA = a.get(10, TimeUnit.SECONDS);
            assertThat(b.get(10, TimeUnit.SECONDS)).isPositive();
            assertThat(a2.get(10, TimeUnit.SECONDS)).isGreaterThan(tokenA);
            assertThat(active.held()).isEmpty();
            assertThat(active.waiting()).isEmpty();
        });
    }

    @Test
    void key_spelOverArguments_namesTheLock() {
        runner(new Orders.Counter()).run(ctx -> {
            Orders orders = ctx.getBean(Orders.class);
            assertThat(orders.name(42)).isEqualTo("order:42");
            assertThat(orders.positional("x", 7)).isEqualTo("x:7");
            assertThat(orders.beanReference("9")).isEqualTo("tenant-a:9");
        });
    }

    @Test
    void key_nullOrInvalidAtCallTime_failsWithoutRunning() {
        runner(new Orders.Counter()).run(ctx -> {
            Orders orders = ctx.getBean(Orders.class);
            assertThatThrownBy(() -> orders.nameOrNull(null))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("Orders.nameOrNull")
                    .hasMessageContaining("gave null");
            assertThatThrownBy(() -> orders.nameOrNull(""))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("an empty name");
            assertThatThrownBy(() -> orders.nameOrNull("has space"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("Orders.nameOrNull")
                    .hasMessageContaining("' '");
        });
    }

    @Test
    void wait_heldElsewhere_throwsOrSkips() throws Exception {
        LockClient other = otherClient();
        runner(new Orders.Counter()).run(ctx -> {
            Orders orders = ctx.getBean(Orders.class);
            try (Lease held = other.lock("order:7").acquire()) {
                assertThatThrownBy(() -> orders.token(7)).isInstanceOfSatisfying(LockTimeoutException.class, e -> {
                    assertThat(e.lockName()).isEqualTo("order:7");
                    assertThat(e.backend()).isEqualTo(backend.name());
                    assertThat(e.waitTime()).isEqualTo(Duration.ofMillis(300));
                });
                assertThat(orders.skip(7)).isNull();
                assertThat(orders.skipOptional(7)).isEqualTo(Optional.empty());
                assertThat(orders.skip(8)).isEqualTo("ran");
            }
            assertThat(orders.skip(7)).isEqualTo("ran");
            assertThat(orders.skipOptional(7)).contains("ran");
        });
    }

    @Test
    void reentrantCall_throughProxy_sharesTheOuterLease() {
        runner(new Orders.Counter()).run(ctx -> {
            Orders orders = ctx.getBean(Orders.class);
            long[] tokens = orders.reentrant(5);
            assertThat(tokens[0]).isPositive();
            assertThat(tokens[1]).isEqualTo(tokens[0]);
            assertThat(tokens[2]).isEqualTo(tokens[0]);
            // Released once, by the outer call: the next grant has a later token.
            assertThat(orders.token(5)).isGreaterThan(tokens[0]);
        });
    }

    @Test
    void leaseParameter_isFilledWithTheCurrentLease_tokensIncrease() {
        runner(new Orders.Counter()).run(ctx -> {
            Orders orders = ctx.getBean(Orders.class);
            long first = orders.injected(3, null);
            assertThat(first).isPositive();
            assertThat(orders.injected(3, null)).isGreaterThan(first);
        });
    }

    @Test
    void asyncMethod_holdsUntilItsStageCompletes() {
        LockClient other = otherClient();
        runner(new Orders.Counter()).run(ctx -> {
            Orders orders = ctx.getBean(Orders.class);
            CompletableFuture<String> gate = new CompletableFuture<>();
            CompletableFuture<Long> call = orders.async("k", gate);
            assertThat(call).isNotDone();
            // The acquisition is asynchronous: wait until the aspect reports the lock held.
            await().atMost(Duration.ofSeconds(10)).until(() -> ctx.getBean(ActiveLocks.class).held().stream()
                    .anyMatch(e -> e.lockName().equals("async:k")));
            assertThat(other.lock("async:k").tryAcquire(Duration.ZERO))
                    .as("held while the stage runs")
                    .isEmpty();
            assertThat(orders.asyncSkip("k").get(10, TimeUnit.SECONDS)).isNull();
            CompletableFuture<Long> second = orders.async("k", CompletableFuture.completedFuture("x"));
            assertThatThrownBy(() -> second.get(10, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(LockTimeoutException.class);

            gate.complete("done");
            long token = call.get(10, TimeUnit.SECONDS);
            assertThat(token).isPositive();
            await().atMost(Duration.ofSeconds(10)).until(() -> {
                Optional<Lease> l = other.lock("async:k").tryAcquire(Duration.ZERO);
                l.ifPresent(Lease::close);
                return l.isPresent();
            });
            assertThat(orders.asyncSkip("k").get(10, TimeUnit.SECONDS)).isEqualTo("ran");
        });
    }

    @Test
    void asyncMethod_callerCancelsWhileWaiting_attemptWithdrawn() throws Exception {
        LockClient other = otherClient();
        runner(new Orders.Counter()).run(ctx -> {
            Orders orders = ctx.getBean(Orders.class);
            ActiveLocks active = ctx.getBean(ActiveLocks.class);
            Lease held = other.lock("async:c").acquire();
            CompletableFuture<String> call = orders.asyncUnbounded("c");
            await().atMost(Duration.ofSeconds(10)).until(() -> active.waiting().size() == 1);
            assertThat(call.cancel(false)).isTrue();
            await().atMost(Duration.ofSeconds(10)).until(() -> active.waiting().isEmpty());
            held.close();
            // FIFO: an attempt still queued would be granted before this one.
            try (Lease again =
                    other.lock("async:c").tryAcquire(Duration.ofSeconds(5)).orElseThrow()) {
                assertThat(again.isValid()).isTrue();
            }
            assertThat(active.held()).isEmpty();
        });
    }

    @Test
    void blockingWait_interrupted_throwsLockInterruptedAndLeavesNothingQueued() throws Exception {
        LockClient other = otherClient();
        runner(new Orders.Counter()).run(ctx -> {
            Orders orders = ctx.getBean(Orders.class);
            ActiveLocks active = ctx.getBean(ActiveLocks.class);
            Lease held = other.lock("order:9").acquire();
            CompletableFuture<Throwable> outcome = new CompletableFuture<>();
            Thread caller = new Thread(() -> {
                try {
                    orders.name(9);
                    outcome.complete(null);
                } catch (Throwable t) {
                    outcome.complete(
                            Thread.currentThread().isInterrupted() ? t : new AssertionError("flag not set", t));
                }
            });
            caller.start();
            await().atMost(Duration.ofSeconds(10)).until(() -> active.waiting().size() == 1);
            caller.interrupt();
            assertThat(outcome.get(10, TimeUnit.SECONDS))
                    .isInstanceOf(io.dlock.LockInterruptedException.class)
                    .hasMessageContaining("order:9");
            assertThat(active.waiting()).isEmpty();
            held.close();
            try (Lease again =
                    other.lock("order:9").tryAcquire(Duration.ofSeconds(5)).orElseThrow()) {
                assertThat(again.isValid()).isTrue();
            }
        });
    }

    @Test
    void leaseTime_methodRunsLonger_lockReleasedWhileItRuns() {
        LockClient other = otherClient();
        runner(new Orders.Counter()).run(ctx -> {
            Orders orders = ctx.getBean(Orders.class);
            Future<Boolean> call = pool.submit(orders::bounded);
            assertThat(call.get(20, TimeUnit.SECONDS)).isTrue();
            try (Lease l =
                    other.lock("bounded").tryAcquire(Duration.ofSeconds(5)).orElseThrow()) {
                assertThat(l.isValid()).isTrue();
            }
        });
    }

    @SuppressWarnings("unchecked")
    private static java.util.List<ActiveLocks.Entry> entries(java.util.Map<String, Object> view, String key) {
        return (java.util.List<ActiveLocks.Entry>) view.get(key);
    }
}
