package io.dlock.shedlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.FaultProxy;
import io.dlock.testkit.TestServer;
import io.dlock.testkit.Timing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.LockAssert;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockExtender;
import net.javacrumbs.shedlock.core.LockingTaskExecutor;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Every case of ShedLock's provider test suite ({@code AbstractLockProviderIntegrationTest} and
 * {@code AbstractExtensibleLockProviderIntegrationTest} of {@code shedlock-test-support}, which is not
 * on Maven Central), written out for {@link DLockLockProvider}, plus what dlock adds: a second node,
 * a crashed holder, an unreachable backend, the fencing token and the lease a task reads.
 *
 * <p>"Locked" and "unlocked" are judged as ShedLock's suite judges them, from outside: another
 * node's client (its own connection) tries the same lock name with {@code tryAcquire(ZERO)}.
 * A backend's IT starts the server and says how to reach it.
 */
abstract class ShedLockProviderCases {
    /** ShedLock's suite: lockAtLeastFor of its lockAtLeastFor case. */
    static final Duration LOCK_AT_LEAST_FOR = Duration.ofSeconds(2);
    /** ShedLock's suite: lockAtMostFor of the extension cases. */
    static final Duration ORIGINAL_LOCK_DURATION = Duration.ofSeconds(2);

    final String name = "shed-" + UUID.randomUUID();
    private final List<AutoCloseable> closeables = new ArrayList<>();
    DLockLockProvider provider;
    LockClient observer;

    /** The running server. */
    abstract TestServer server();

    /** The dlock URI of {@link #server()} with the given extra query options ({@code "a=1&b=2"} or empty). */
    String uri(String options) {
        String base = server().uri("shedlock");
        return options.isEmpty() ? base : base + (base.contains("?") ? "&" : "?") + options;
    }

    /** Options every client of this backend gets (for example createTable for SQL). */
    String baseOptions() {
        return "";
    }

    /** Options that give a dead holder a short lease or session, about 2 s. */
    String shortLease() {
        return "leaseTime=2s";
    }

    /** How soon after a {@link #shortLease()} holder is killed its lock must be free. */
    Duration crashReleaseBound() {
        return Duration.ofSeconds(5);
    }

    LockClient client(String options) {
        String all =
                options.isEmpty() ? baseOptions() : baseOptions().isEmpty() ? options : baseOptions() + "&" + options;
        LockClient c = LockClient.connect(uri(all));
        closeables.add(c);
        return c;
    }

    DLockLockProvider provider(LockClient client) {
        DLockLockProvider p = DLockLockProvider.of(client);
        closeables.add(0, p); // closed before the clients
        return p;
    }

    @BeforeEach
    void connect() {
        provider = provider(client(""));
        observer = client("");
    }

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable c : closeables) {
            c.close();
        }
    }

    // ---- AbstractLockProviderIntegrationTest ----

    @Test
    void lock_free_heldUntilUnlock() {
        Optional<SimpleLock> lock = provider.lock(config(name));
        assertThat(lock).isNotEmpty();
        assertLocked(name);
        lock.get().unlock();
        assertUnlocked(name);
    }

    @Test
    void lock_heldByThisProvider_returnsEmpty() {
        Optional<SimpleLock> lock = provider.lock(config(name));
        assertThat(lock).isNotEmpty();
        assertThat(provider.lock(config(name))).isEmpty();
        lock.get().unlock();
    }

    @Test
    void lock_heldByAnotherNode_returnsEmptyOnBothSides() {
        DLockLockProvider other = provider(client(""));
        Optional<SimpleLock> lock = other.lock(config(name));
        assertThat(lock).isNotEmpty();
        assertThat(provider.lock(config(name))).isEmpty();
        lock.get().unlock();
        Optional<SimpleLock> mine = provider.lock(config(name));
        assertThat(mine).isNotEmpty();
        assertThat(other.lock(config(name))).isEmpty();
        mine.get().unlock();
    }

    @Test
    void lock_twoNames_bothGranted() {
        Optional<SimpleLock> lock1 = provider.lock(config(name));
        Optional<SimpleLock> lock2 = provider.lock(config(name + "-2"));
        assertThat(lock1).isNotEmpty();
        assertThat(lock2).isNotEmpty();
        assertLocked(name);
        assertLocked(name + "-2");
        lock1.get().unlock();
        lock2.get().unlock();
        assertUnlocked(name);
        assertUnlocked(name + "-2");
    }

    @Test
    void lock_twiceInARow_grantsBothWithIncreasingTokens() {
        Optional<SimpleLock> lock1 = provider.lock(config(name));
        assertThat(lock1).isNotEmpty();
        long token1 = DLockShedLock.currentLease().fencingToken();
        lock1.get().unlock();

        Optional<SimpleLock> lock2 = provider.lock(config(name));
        assertThat(lock2).isNotEmpty();
        long token2 = DLockShedLock.currentLease().fencingToken();
        lock2.get().unlock();
        assertThat(token2).isGreaterThan(token1);
    }

    @Test
    void lock_afterLockAtMostFor_isFreeAgain() throws Exception {
        Duration atMost = Duration.ofMillis(50);
        Optional<SimpleLock> lock1 = provider.lock(config(name, atMost, Duration.ZERO));
        assertThat(lock1).isNotEmpty();
        Lease lease = DLockShedLock.currentLease();

        Thread.sleep(Timing.scale(atMost.multipliedBy(2)).toMillis());
        assertUnlocked(name);
        assertThat(lease.isValid()).as("the lease after lockAtMostFor").isFalse();

        Optional<SimpleLock> lock2 = provider.lock(config(name, Duration.ofMillis(50), Duration.ZERO));
        assertThat(lock2).isNotEmpty();
        lock2.get().unlock();
        lock1.get().unlock(); // the expired task ends: nothing to release, and lock2's grant is not touched
    }

    @Test
    void lock_rightAfterUnlock_grantedEachTime() {
        LockConfiguration configuration = config(name);
        for (int i = 0; i < 10; i++) {
            Optional<SimpleLock> lock = provider.lock(configuration);
            assertThat(lock).as("locked in round %d", i).isNotEmpty();
            assertThat(provider.lock(configuration)).isEmpty();
            lock.get().unlock();
        }
    }

    /**
     * ShedLock's fuzz test: 8 threads, two jobs, each run increments its job's plain int counter
     * after a 1 ms sleep; a lost update shows broken exclusion. Here the threads are spread over two
     * nodes (two clients).
     */
    @Test
    void executeWithLock_eightThreadsTwoNodes_countersExact() throws Exception {
        int threads = 8;
        int iterations = 50;
        int shortIterations = 10;
        List<LockingTaskExecutor> nodes =
                List.of(new DefaultLockingTaskExecutor(provider), new DefaultLockingTaskExecutor(provider(client(""))));
        Job job1 = new Job(name + "-1");
        Job job2 = new Job(name + "-2");
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Callable<Void>> tasks = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                Job job = t % 2 == 0 ? job1 : job2;
                LockingTaskExecutor node = nodes.get((t / 2) % 2);
                int runs = t == 0 ? shortIterations : iterations;
                tasks.add(() -> {
                    AtomicInteger done = new AtomicInteger();
                    while (done.get() < runs) {
                        node.executeWithLock(
                                (Runnable) () -> {
                                    int n = job.counter;
                                    sleep(Duration.ofMillis(1));
                                    job.counter = n + 1;
                                    done.incrementAndGet();
                                },
                                job.configuration());
                    }
                    return null;
                });
            }
            for (Future<Void> f : pool.invokeAll(tasks, 5, TimeUnit.MINUTES)) {
                f.get();
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(job2.counter).isEqualTo(threads / 2 * iterations);
        assertThat(job1.counter).isEqualTo((threads / 2 - 1) * iterations + shortIterations);
    }

    @Test
    void unlock_beforeLockAtLeastFor_keepsLockUntilThen() throws Exception {
        long start = System.nanoTime();
        Optional<SimpleLock> lock1 = provider.lock(config(name, LOCK_AT_LEAST_FOR.multipliedBy(2), LOCK_AT_LEAST_FOR));
        assertThat(lock1).isNotEmpty();
        lock1.get().unlock();

        // Unlocked, yet kept until lockAtLeastFor after the lock call.
        assertThat(provider.lock(config(name))).isEmpty();
        assertLocked(name);

        await().atMost(Timing.scale(LOCK_AT_LEAST_FOR.plusSeconds(2)))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> free(name));
        long freeAfterMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(freeAfterMs).isGreaterThanOrEqualTo(LOCK_AT_LEAST_FOR.toMillis());
        assertThat(freeAfterMs)
                .isLessThan(Timing.scale(LOCK_AT_LEAST_FOR.plusMillis(1000)).toMillis());

        Optional<SimpleLock> lock3 = provider.lock(config(name));
        assertThat(lock3).isNotEmpty();
        lock3.get().unlock();
    }

    @Test
    void unlock_afterLockAtLeastFor_releasesAtOnce() {
        Optional<SimpleLock> lock = provider.lock(config(name, Duration.ofMinutes(1), Duration.ofMillis(100)));
        assertThat(lock).isNotEmpty();
        sleep(Duration.ofMillis(150));
        lock.get().unlock();
        assertUnlocked(name);
    }

    // ---- what dlock adds: a running task past lockAtMostFor, a dead holder, an unreachable backend ----

    @Test
    void lockAtMostFor_passesWhileTaskRuns_otherNodeGetsItAndLateUnlockLeavesIt() {
        // The lease counts from when the grant was asked for (conservatively), which is after this
        // and may be well before lock() returns on a loaded machine.
        long passedAt = System.nanoTime() + Duration.ofMillis(300).toNanos();
        Optional<SimpleLock> lock = provider.lock(config(name, Duration.ofMillis(300), Duration.ZERO));
        assertThat(lock).isNotEmpty();
        Lease lease = DLockShedLock.currentLease();
        await().atMost(Timing.scale(Duration.ofSeconds(3))).until(() -> !lease.isValid());
        assertThat(System.nanoTime() - passedAt)
                .as("invalid no earlier than lockAtMostFor")
                .isGreaterThanOrEqualTo(0);

        DLockLockProvider other = provider(client(""));
        Optional<SimpleLock> next = other.lock(config(name));
        assertThat(next).isNotEmpty();
        lock.get().unlock(); // the overrunning task ends
        assertThat(provider.lock(config(name)))
                .as("the other node's lock is untouched")
                .isEmpty();
        next.get().unlock();
    }

    @Test
    void lock_holderKilled_freeWithinCrashBound() throws Exception {
        String options = baseOptions().isEmpty() ? shortLease() : baseOptions() + "&" + shortLease();
        try (ChildJvm holder = ChildJvm.start(ShedLockHolderMain.class, List.of(uri(options), name, "PT10M"))) {
            long token = Long.parseLong(holder.awaitLine("LOCKED", Timing.scale(Duration.ofSeconds(60)))
                    .split(" ")[1]);
            assertLocked(name);
            long killedAt = System.nanoTime();
            holder.kill();
            assertLocked(name); // a SIGKILL releases nothing: the backend's bound does
            await().atMost(Timing.scale(crashReleaseBound().plusSeconds(5)))
                    .pollInterval(Duration.ofMillis(50))
                    .until(() -> provider.lock(config(name))
                            .map(l -> {
                                assertThat(DLockShedLock.currentLease().fencingToken())
                                        .isGreaterThan(token);
                                l.unlock();
                                return true;
                            })
                            .orElse(false));
            long freeAfterMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
            assertThat(freeAfterMs).isLessThan(Timing.scale(crashReleaseBound()).toMillis());
        }
    }

    @Test
    void lock_backendUnreachable_throwsLockBackendExceptionNotEmpty() {
        try (FaultProxy proxy = FaultProxy.start(server().port())) {
            String options = baseOptions().isEmpty() ? "connectTimeout=2s" : baseOptions() + "&connectTimeout=2s";
            String viaProxy = uri(options).replace(":" + server().port(), ":" + proxy.port());
            LockClient client = LockClient.connect(viaProxy);
            closeables.add(client);
            DLockLockProvider cut = provider(client);
            cut.lock(config(name)).orElseThrow().unlock();

            proxy.refuse();
            proxy.resetConnections();
            long start = System.nanoTime();
            assertThatThrownBy(() -> cut.lock(config(name))).isInstanceOf(LockBackendException.class);
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Timing.scale(Duration.ofSeconds(15)));
            assertUnlocked(name);

            proxy.pass();
            await().atMost(Timing.scale(Duration.ofSeconds(30)))
                    .ignoreException(LockBackendException.class)
                    .until(() -> cut.lock(config(name))
                            .map(l -> {
                                l.unlock();
                                return true;
                            })
                            .orElse(false));
        }
    }

    // ---- the lease a task reads; LockAssert and LockExtender inside ShedLock's executor ----

    @Test
    void currentLease_insideExecutor_givesTokenOfTheGrantAndLockAssertPasses() throws Throwable {
        LockingTaskExecutor executor = new DefaultLockingTaskExecutor(provider);
        AtomicLong seen = new AtomicLong();
        AtomicLong afterExtend = new AtomicLong();
        LockingTaskExecutor.TaskResult<Boolean> result = executor.executeWithLock(
                () -> {
                    LockAssert.assertLocked();
                    Lease lease = DLockShedLock.currentLease();
                    assertThat(lease.isValid()).isTrue();
                    assertThat(lease.lockName()).isEqualTo(name);
                    assertThat(DLockShedLock.findLease(name)).containsSame(lease);
                    seen.set(lease.fencingToken());
                    LockExtender.extendActiveLock(Duration.ofSeconds(30), Duration.ZERO);
                    afterExtend.set(DLockShedLock.currentLease().fencingToken());
                    assertThat(free(name)).isFalse();
                    return true;
                },
                config(name));
        assertThat(result.wasExecuted()).isTrue();
        assertThat(seen.get()).isPositive().isEqualTo(afterExtend.get());
        assertThat(DLockShedLock.findCurrentLease()).isEmpty();
        assertThatThrownBy(DLockShedLock::currentLease).isInstanceOf(IllegalStateException.class);
        assertUnlocked(name);
        try (Lease next = observer.lock(name).tryAcquire(Duration.ZERO).orElseThrow()) {
            assertThat(next.fencingToken()).isGreaterThan(seen.get());
        }
    }

    // ---- AbstractExtensibleLockProviderIntegrationTest ----

    @Test
    void extend_beforeExpiry_keepsLockPastOriginalLockAtMostFor() {
        SimpleLock lock = lock(ORIGINAL_LOCK_DURATION);
        long token = DLockShedLock.currentLease().fencingToken();
        SimpleLock extended = extend(lock, Duration.ZERO);
        assertThat(DLockShedLock.currentLease().fencingToken()).isEqualTo(token);

        sleep(ORIGINAL_LOCK_DURATION);
        assertLocked(name);
        extended.unlock();
        assertUnlocked(name);
    }

    @Test
    void extend_threeTimes_keepsLock() {
        SimpleLock lock = lock(ORIGINAL_LOCK_DURATION);
        SimpleLock extended = extend(extend(extend(lock, Duration.ZERO), Duration.ZERO), Duration.ZERO);

        sleep(ORIGINAL_LOCK_DURATION);
        assertLocked(name);
        extended.unlock();
        assertUnlocked(name);
    }

    @Test
    void extend_afterUnlock_throwsIllegalState() {
        SimpleLock lock = lock(ORIGINAL_LOCK_DURATION);
        lock.unlock();
        assertUnlocked(name);
        assertThatThrownBy(() -> lock.extend(Duration.ofSeconds(10), Duration.ZERO))
                .isInstanceOf(IllegalStateException.class);
        assertUnlocked(name);
    }

    @Test
    void extend_afterLockAtMostFor_returnsEmptyAndLockIsFree() {
        Optional<SimpleLock> lock = provider.lock(config(name, Duration.ofMillis(2), Duration.ZERO));
        assertThat(lock).isNotEmpty();
        sleep(Duration.ofMillis(4));
        assertThat(lock.get().extend(Duration.ofSeconds(10), Duration.ZERO)).isEmpty();
        assertUnlocked(name);
    }

    @Test
    void extend_withLockAtLeastFor_keepsLockAfterUnlock() {
        SimpleLock lock = lock(Duration.ofSeconds(10));
        SimpleLock extended = extend(lock, Duration.ofSeconds(9));
        extended.unlock();
        assertLocked(name);
    }

    @Test
    void extend_twice_secondThrowsIllegalState() {
        SimpleLock lock = lock(Duration.ofSeconds(10));
        extend(lock, Duration.ofSeconds(9));
        assertThatThrownBy(() -> lock.extend(Duration.ofSeconds(10), Duration.ofSeconds(9)))
                .isInstanceOf(IllegalStateException.class);
    }

    @Test
    void unlock_afterExtend_throwsIllegalState() {
        SimpleLock lock = lock(Duration.ofSeconds(10));
        extend(lock, Duration.ofSeconds(9));
        assertThatThrownBy(lock::unlock).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void extend_afterAnotherNodeTookTheExpiredLock_returnsEmptyAndLeavesItsLock() {
        Optional<SimpleLock> lock = provider.lock(config(name, Duration.ofMillis(200), Duration.ZERO));
        assertThat(lock).isNotEmpty();
        DLockLockProvider other = provider(client(""));
        await().atMost(Timing.scale(Duration.ofSeconds(3)))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> other.lock(config(name)).isPresent());
        assertThat(lock.get().extend(Duration.ofSeconds(10), Duration.ZERO)).isEmpty();
        assertLocked(name); // still the other node's
        assertThat(provider.lock(config(name))).isEmpty();
    }

    @Test
    void extend_lockAtLeastForLongerThanLockAtMostFor_throwsAndChangesNothing() {
        SimpleLock lock = lock(Duration.ofSeconds(10));
        assertThatThrownBy(() -> lock.extend(Duration.ofSeconds(1), Duration.ofSeconds(2)))
                .isInstanceOf(IllegalArgumentException.class);
        lock.unlock(); // still usable
        assertUnlocked(name);
    }

    // ---- helpers ----

    SimpleLock lock(Duration lockAtMostFor) {
        Optional<SimpleLock> lock = provider.lock(config(name, lockAtMostFor, Duration.ZERO));
        assertThat(lock).isNotEmpty();
        assertLocked(name);
        return lock.get();
    }

    static SimpleLock extend(SimpleLock lock, Duration lockAtLeastFor) {
        Optional<SimpleLock> extended = lock.extend(Duration.ofSeconds(10), lockAtLeastFor);
        assertThat(extended).isNotEmpty();
        return extended.get();
    }

    static LockConfiguration config(String name) {
        return config(name, Duration.ofMinutes(5), Duration.ZERO);
    }

    static LockConfiguration config(String name, Duration lockAtMostFor, Duration lockAtLeastFor) {
        return new LockConfiguration(ClockProvider.now(), name, lockAtMostFor, lockAtLeastFor);
    }

    /** Whether another node can take the lock now (and gives it back at once). */
    boolean free(String lockName) throws InterruptedException {
        Optional<Lease> lease = observer.lock(lockName).tryAcquire(Duration.ZERO);
        lease.ifPresent(Lease::close);
        return lease.isPresent();
    }

    void assertLocked(String lockName) {
        try {
            assertThat(free(lockName)).as("lock '%s' is held", lockName).isFalse();
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    void assertUnlocked(String lockName) {
        try {
            assertThat(free(lockName)).as("lock '%s' is free", lockName).isTrue();
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    static void sleep(Duration d) {
        try {
            Thread.sleep(d.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /** A job of the fuzz test: an unguarded counter that only the lock protects. */
    static final class Job {
        final String lockName;
        int counter;

        Job(String lockName) {
            this.lockName = lockName;
        }

        LockConfiguration configuration() {
            return new LockConfiguration(ClockProvider.now(), lockName, Duration.ofMinutes(5), Duration.ofMillis(5));
        }
    }
}
