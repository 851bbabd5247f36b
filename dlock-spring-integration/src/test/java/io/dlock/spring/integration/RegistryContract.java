package io.dlock.spring.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.testkit.Timing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/**
 * The cases Spring Integration's own registries are tested with (JDBC, Redis, ZooKeeper and the default
 * registry), written against the public interfaces and run on a real server: one subclass per backend says
 * how to reach it. Each test gets a fresh namespace and fresh clients, closed after it.
 */
abstract class RegistryContract {
    private static final AtomicInteger NAMESPACES = new AtomicInteger();

    private final List<AutoCloseable> opened = new ArrayList<>();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    String namespace;

    /** The URI of a client on {@code namespace}. */
    abstract String uri(String namespace);

    /** Prepares a fresh namespace before its first client (a backend's data-loss fence marker). */
    void prepare(String namespace) {}

    @BeforeEach
    void newNamespace(TestInfo info) {
        namespace = "si" + NAMESPACES.incrementAndGet() + "p"
                + ProcessHandle.current().pid();
        prepare(namespace);
    }

    @AfterEach
    void closeEverything() throws Exception {
        threads.shutdownNow();
        assertThat(threads.awaitTermination(30, TimeUnit.SECONDS))
                .as("test threads end")
                .isTrue();
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
        opened.clear();
    }

    /** A new client ("node") on the test's namespace, closed after the test. */
    LockClient client() {
        return track(LockClient.connect(uri(namespace)));
    }

    LockClient client(LockOptions options) {
        return track(LockClient.connect(uri(namespace), options));
    }

    <T extends AutoCloseable> T track(T closeable) {
        opened.add(closeable);
        return closeable;
    }

    DLockRegistry registry() {
        return DLockRegistry.of(client(), "reg");
    }

    static Duration scaled(long millis) {
        return Timing.scale(Duration.ofMillis(millis));
    }

    /** Runs {@code task} on another thread and waits for its result. */
    <T> T onOtherThread(java.util.concurrent.Callable<T> task) throws Exception {
        return threads.submit(task).get(scaled(30_000).toMillis(), TimeUnit.MILLISECONDS);
    }

    /** {@code lock.tryLock()} on another thread; the hold, if any, stays with that thread. */
    boolean tryLockOnOtherThread(Lock lock) throws Exception {
        Boolean got = onOtherThread(lock::tryLock);
        return got;
    }

    <T> Future<T> start(java.util.concurrent.Callable<T> task) {
        return threads.submit(task);
    }

    // ---- obtain and keys

    @Test
    void obtain_sameKeyTwice_returnsSameLock_otherKeyAnother() {
        DLockRegistry registry = registry();
        Lock foo = registry.obtain("foo");
        assertThat(registry.obtain("foo")).isSameAs(foo);
        assertThat(registry.obtain("bar")).isNotSameAs(foo);
    }

    @Test
    void lockName_keysOfAnyTypeWithOwnToString_mapToPrefixedString() {
        DLockRegistry registry = registry();
        UUID id = UUID.fromString("7c9e6679-7425-40de-944b-e07fc1f90ae7");
        assertThat(registry.lockName("foo")).isEqualTo("reg:foo");
        assertThat(registry.lockName(42L)).isEqualTo("reg:42");
        assertThat(registry.lockName(id)).isEqualTo("reg:" + id);
        assertThat(registry.obtain(42L)).isSameAs(registry.obtain("42"));
        assertThat(DLockRegistry.of(client()).lockName("foo")).isEqualTo("foo");
    }

    @Test
    void obtain_badKey_throwsIllegalArgumentException_registersNothing() throws Exception {
        DLockRegistry registry = registry();
        assertThatThrownBy(() -> registry.obtain("has space"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("has space");
        assertThatThrownBy(() -> registry.obtain(new Object()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("toString");
        assertThatThrownBy(() -> registry.obtain("x".repeat(300))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> registry.obtain(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> DLockRegistry.of(client(), "bad prefix"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("bad prefix");
        assertThat(registry.toString()).contains("locks=0");
    }

    @Test
    void newCondition_throwsUnsupportedOperationException() {
        assertThatThrownBy(() -> registry().obtain("foo").newCondition())
                .isInstanceOf(UnsupportedOperationException.class);
    }

    // ---- lock, tryLock, unlock

    @Test
    void lock_reentrantFromOneThread_heldUntilOutermostUnlock() throws Exception {
        DLockRegistry registry = registry();
        DLockRegistry other = registry();
        Lock lock = registry.obtain("foo");
        lock.lock();
        lock.lockInterruptibly();
        assertThat(lock.tryLock()).isTrue();
        assertThat(lock.tryLock(10, TimeUnit.MILLISECONDS)).isTrue();
        for (int i = 0; i < 3; i++) {
            lock.unlock();
            assertThat(onOtherThread(() -> other.obtain("foo").tryLock()))
                    .as("held by the owner after %d of 4 unlocks", i + 1)
                    .isFalse();
        }
        lock.unlock();
        assertThat(onOtherThread(() -> {
                    Lock l = other.obtain("foo");
                    boolean got = l.tryLock();
                    l.unlock();
                    return got;
                }))
                .as("free after the outermost unlock")
                .isTrue();
        assertThatExceptionOfType(IllegalMonitorStateException.class).isThrownBy(lock::unlock);
    }

    @Test
    void tryLock_heldByAnotherThread_falseAfterWaiting() throws Exception {
        DLockRegistry registry = registry();
        Lock lock = registry.obtain("foo");
        lock.lock();
        try {
            long start = System.nanoTime();
            assertThat(onOtherThread(() -> lock.tryLock(200, TimeUnit.MILLISECONDS)))
                    .isFalse();
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(200));
            assertThat(tryLockOnOtherThread(lock)).isFalse();
        } finally {
            lock.unlock();
        }
    }

    @Test
    void tryLock_withTimeout_getsLockReleasedMeanwhile() throws Exception {
        Lock lock = registry().obtain("foo");
        lock.lock();
        CountDownLatch waiting = new CountDownLatch(1);
        Future<Boolean> waiter = start(() -> {
            waiting.countDown();
            boolean got = lock.tryLock(scaled(20_000).toMillis(), TimeUnit.MILLISECONDS);
            if (got) {
                lock.unlock();
            }
            return got;
        });
        waiting.await();
        await().during(Duration.ofMillis(100)).atMost(Duration.ofSeconds(5)).until(() -> !waiter.isDone());
        lock.unlock();
        assertThat(waiter.get(30, TimeUnit.SECONDS)).isTrue();
    }

    @Test
    void unlock_byThreadThatDoesNotHoldIt_throwsIllegalMonitorStateException_lockStaysHeld() throws Exception {
        DLockRegistry registry = registry();
        Lock lock = registry.obtain("foo");
        lock.lock();
        try {
            Throwable thrown = onOtherThread(() -> {
                try {
                    lock.unlock();
                    return null;
                } catch (Throwable t) {
                    return t;
                }
            });
            assertThat(thrown).isInstanceOf(IllegalMonitorStateException.class);
            assertThat(onOtherThread(() -> registry().obtain("foo").tryLock())).isFalse();
        } finally {
            lock.unlock();
        }
        assertThatExceptionOfType(IllegalMonitorStateException.class).isThrownBy(lock::unlock);
    }

    @Test
    void lockInterruptibly_interruptedWhileWaiting_throwsInterruptedException_holdsNothing() throws Exception {
        DLockRegistry registry = registry();
        Lock lock = registry.obtain("foo");
        lock.lock();
        AtomicReference<Thread> waiterThread = new AtomicReference<>();
        AtomicBoolean heldAfter = new AtomicBoolean(true);
        Future<Throwable> waiter = start(() -> {
            waiterThread.set(Thread.currentThread());
            try {
                lock.lockInterruptibly();
                lock.unlock();
                return null;
            } catch (InterruptedException e) {
                heldAfter.set(isHeldByMe(registry));
                return e;
            }
        });
        await().until(() -> waiterThread.get() != null && parked(waiterThread.get()));
        waiterThread.get().interrupt();
        assertThat(waiter.get(30, TimeUnit.SECONDS)).isInstanceOf(InterruptedException.class);
        assertThat(heldAfter).isFalse();
        lock.unlock();
        assertThat(onOtherThread(() -> {
                    Lock l = registry().obtain("foo");
                    boolean got = l.tryLock(scaled(5_000).toMillis(), TimeUnit.MILLISECONDS);
                    if (got) {
                        l.unlock();
                    }
                    return got;
                }))
                .as("nothing left in the queue by the interrupted waiter")
                .isTrue();
    }

    private static boolean isHeldByMe(DLockRegistry registry) {
        try {
            registry.renewLock("foo");
            return true;
        } catch (IllegalMonitorStateException e) {
            return false;
        }
    }

    @Test
    void lock_interruptedWhileWaiting_keepsWaiting_getsLockWithFlagSet() throws Exception {
        Lock lock = registry().obtain("foo");
        lock.lock();
        AtomicReference<Thread> waiterThread = new AtomicReference<>();
        Future<Boolean> waiter = start(() -> {
            waiterThread.set(Thread.currentThread());
            lock.lock();
            boolean flag = Thread.interrupted();
            lock.unlock();
            return flag;
        });
        await().until(() -> waiterThread.get() != null && parked(waiterThread.get()));
        waiterThread.get().interrupt();
        await("lock() waits through an interrupt")
                .during(Duration.ofMillis(200))
                .atMost(Duration.ofSeconds(5))
                .until(() -> !waiter.isDone());
        lock.unlock();
        assertThat(waiter.get(30, TimeUnit.SECONDS))
                .as("interrupt flag restored")
                .isTrue();
    }

    /**
     * Throws Throwable: on Spring Integration 7, whose {@code LockRegistry} is generic, the registry (built
     * against 6.5) is a raw type, so {@code executeLocked}'s exception type erases to Throwable.
     */
    @Test
    void executeLocked_heldElsewhere_timesOut_freeRuns() throws Throwable {
        DLockRegistry registry = registry();
        DLockRegistry other = registry();
        Lock lock = other.obtain("job");
        lock.lock();
        try {
            assertThatExceptionOfType(TimeoutException.class)
                    .isThrownBy(() -> registry.executeLocked("job", Duration.ofMillis(100), () -> {}));
        } finally {
            lock.unlock();
        }
        AtomicLong token = new AtomicLong();
        registry.executeLocked("job", Duration.ofSeconds(10), () -> token.set(registry.fencingToken("job")));
        assertThat(token).hasPositiveValue();
        assertThat(tryLockOnOtherThread(other.obtain("job")))
                .as("released after the task")
                .isTrue();
    }

    // ---- two nodes

    @Test
    void twoRegistriesOnTwoClients_excludeEachOther_counterExact() throws Exception {
        DLockRegistry node1 = registry();
        DLockRegistry node2 = registry();
        int perThread = 15;
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger overlaps = new AtomicInteger();
        int[] counter = {0};
        List<Future<Object>> workers = new ArrayList<>();
        for (DLockRegistry node : List.of(node1, node2, node1, node2)) {
            workers.add(start(() -> {
                Lock lock = node.obtain("counter");
                for (int i = 0; i < perThread; i++) {
                    lock.lock();
                    try {
                        if (inside.incrementAndGet() != 1) {
                            overlaps.incrementAndGet();
                        }
                        int read = counter[0];
                        Thread.yield();
                        counter[0] = read + 1;
                        inside.decrementAndGet();
                    } finally {
                        lock.unlock();
                    }
                }
                return null;
            }));
        }
        for (Future<Object> w : workers) {
            w.get(120, TimeUnit.SECONDS);
        }
        assertThat(overlaps).hasValue(0);
        assertThat(counter[0]).isEqualTo(4 * perThread);
    }

    @Test
    void otherRegistry_blockedWhileHeld_getsItAfterUnlock() throws Exception {
        DLockRegistry node1 = registry();
        DLockRegistry node2 = registry();
        Lock lock = node1.obtain("foo");
        lock.lock();
        CompletableFuture<Boolean> other = CompletableFuture.supplyAsync(
                () -> {
                    Lock l = node2.obtain("foo");
                    l.lock();
                    l.unlock();
                    return true;
                },
                threads);
        await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(5)).until(() -> !other.isDone());
        lock.unlock();
        assertThat(other.get(30, TimeUnit.SECONDS)).isTrue();
    }

    // ---- expiry

    @Test
    void expireUnusedOlderThan_dropsOnlyUnheldLocks() throws Exception {
        DLockRegistry registry = registry();
        Lock idle = registry.obtain("idle");
        Lock held = registry.obtain("held");
        held.lock();
        try {
            registry.expireUnusedOlderThan(60_000);
            assertThat(registry.obtain("idle")).as("used recently").isSameAs(idle);
            Thread.sleep(20);
            registry.expireUnusedOlderThan(10);
            assertThat(registry.obtain("held")).as("held").isSameAs(held);
            Lock fresh = registry.obtain("idle");
            assertThat(fresh).as("unused for longer than the age").isNotSameAs(idle);
            assertThat(tryLockOnOtherThread(fresh)).isTrue();
        } finally {
            held.unlock();
        }
        Thread.sleep(20);
        registry.expireUnusedOlderThan(10);
        assertThat(registry.obtain("held")).as("unlocked, then unused").isNotSameAs(held);
    }

    @Test
    void expiredLockObject_stillExcludesWithItsReplacement() throws Exception {
        DLockRegistry registry = registry();
        Lock old = registry.obtain("foo");
        registry.expireUnusedOlderThan(-1);
        Lock replacement = registry.obtain("foo");
        assertThat(replacement).isNotSameAs(old);
        old.lock();
        try {
            assertThat(tryLockOnOtherThread(replacement)).isFalse();
        } finally {
            old.unlock();
        }
    }

    // ---- renewal and fencing

    @Test
    void renewLock_heldByCurrentThread_succeeds_notHeld_throwsIllegalMonitorStateException() throws Exception {
        DLockRegistry registry = registry();
        Lock lock = registry.obtain("foo");
        assertThatExceptionOfType(IllegalMonitorStateException.class).isThrownBy(() -> registry.renewLock("foo"));
        lock.lock();
        try {
            registry.renewLock("foo");
            registry.renewLock("foo", Duration.ofSeconds(30));
            assertThatThrownBy(() -> registry.renewLock("foo", Duration.ZERO))
                    .isInstanceOf(IllegalArgumentException.class);
            Throwable fromOther = onOtherThread(() -> {
                try {
                    registry.renewLock("foo");
                    return null;
                } catch (Throwable t) {
                    return t;
                }
            });
            assertThat(fromOther).isInstanceOf(IllegalMonitorStateException.class);
            assertThatExceptionOfType(IllegalMonitorStateException.class)
                    .isThrownBy(() -> registry.renewLock("unheld"));
        } finally {
            lock.unlock();
        }
        assertThatExceptionOfType(IllegalMonitorStateException.class).isThrownBy(() -> registry.renewLock("foo"));
    }

    @Test
    void fencingToken_increasesWithEveryGrant_sameForNestedHolds() throws Exception {
        DLockRegistry node1 = registry();
        DLockRegistry node2 = registry();
        assertThatExceptionOfType(IllegalMonitorStateException.class).isThrownBy(() -> node1.fencingToken("foo"));
        Lock lock = node1.obtain("foo");
        lock.lock();
        long first = node1.fencingToken("foo");
        lock.lock();
        assertThat(node1.fencingToken("foo")).isEqualTo(first);
        lock.unlock();
        assertThat(node1.fencingToken("foo")).isEqualTo(first);
        lock.unlock();
        long second = onOtherThread(() -> {
            Lock l = node2.obtain("foo");
            l.lock();
            try {
                return node2.fencingToken("foo");
            } finally {
                l.unlock();
            }
        });
        assertThat(second).isGreaterThan(first);
        lock.lock();
        try {
            Thread.currentThread().interrupt();
            assertThat(node1.fencingToken("foo")).isGreaterThan(second);
            assertThat(Thread.interrupted()).as("interrupt flag kept").isTrue();
        } finally {
            lock.unlock();
        }
    }

    // ---- leader election with Spring Integration's initiator

    @Test
    void leaderInitiators_exactlyOneLeads_otherTakesOverOnYieldAndStop() throws Exception {
        LeaderPair pair = new LeaderPair(registry(), registry(), "scheduler");
        try {
            pair.start();
            await().atMost(scaled(30_000)).until(() -> pair.leaders() == 1);
            LeaderPair.Node first = pair.leader();
            LeaderPair.Node second = pair.other(first);
            await().atMost(scaled(10_000)).until(() -> first.granted.get() == 1); // published just after the lock moves
            Thread.sleep(scaled(500).toMillis()); // leadership holds through heartbeats
            assertThat(pair.leaders()).isEqualTo(1);

            first.initiator.getContext().yield();
            await().atMost(scaled(30_000)).until(() -> second.context().isLeader());
            await().atMost(scaled(10_000)).until(() -> first.revoked.get() == 1); // published just after the lock moves
            await().atMost(scaled(10_000))
                    .until(() -> second.granted.get() == 1); // published just after the lock moves
            Thread.sleep(scaled(500).toMillis()); // leadership holds through heartbeats
            assertThat(pair.leaders()).isEqualTo(1);

            second.initiator.stop();
            await().atMost(scaled(30_000)).until(() -> first.context().isLeader());
            await().atMost(scaled(10_000))
                    .until(() -> second.revoked.get() == 1); // published just after the lock moves
            await().atMost(scaled(10_000)).until(() -> first.granted.get() == 2); // published just after the lock moves
            assertThat(pair.events(first)).containsExactly("granted", "revoked", "granted");
            assertThat(pair.events(second)).containsExactly("granted", "revoked");
            assertThat(pair.bothLeading).as("samples with two leaders").hasValue(0);
        } finally {
            pair.stop();
        }
    }

    /** Whether {@code t} waits (parked in the lock), not still on its way to it. */
    private static boolean parked(Thread t) {
        Thread.State st = t.getState();
        return st == Thread.State.WAITING || st == Thread.State.TIMED_WAITING;
    }
}
