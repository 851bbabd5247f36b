package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Capability;
import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockTimeoutException;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.Contention;
import io.dlock.testkit.MutualExclusionChecker;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The exclusive lock on a standalone Redis, through the public API. */
class RedisLockIT extends RedisTestSupport {

    @Test
    void acquire_twoClientsEightThreads_counterExactAndTokensFenced() throws Exception {
        int threads = 8;
        int perThread = 250; // 2,000 increments in total
        Contention.Result r = Contention.run(new LockClient[] {client(), client()}, "counter", threads, perThread,
                Duration.ofMinutes(3));
        MutualExclusionChecker checker = r.checker();
        assertThat(checker.counter()).isEqualTo(threads * perThread);
        assertThat(checker.violations()).isZero();
        assertThat(checker.maxConcurrent()).isEqualTo(1);
        assertThat(r.store().rejectedWrites()).isZero();
        assertThat(r.store().acceptedWrites()).isEqualTo(threads * perThread);
        assertThat(keys()).isEmpty(); // the last release deleted the queue
    }

    @Test
    void acquire_threeJvms_counterExactAndTokensIncrease(@TempDir Path dir) throws Exception {
        Path counter = dir.resolve("counter");
        Files.writeString(counter, "0");
        int iterations = 60;
        List<ChildJvm> jvms = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                jvms.add(track(ChildJvm.start(LockWorkerMain.class,
                        List.of("count", uri(""), "shared", counter.toString(), "" + iterations))));
            }
            for (ChildJvm jvm : jvms) {
                jvm.awaitLine("DONE", scaled(90));
                assertThat(jvm.waitFor(scaled(20))).isZero();
            }
        } finally {
            jvms.forEach(ChildJvm::close);
        }
        assertThat(Files.readString(counter).trim()).isEqualTo(Integer.toString(3 * iterations));
        List<Long> tokens = Files.readAllLines(Path.of(counter + ".tokens")).stream().map(Long::parseLong).toList();
        assertThat(tokens).hasSize(3 * iterations);
        for (int i = 1; i < tokens.size(); i++) {
            assertThat(tokens.get(i)).as("token %d after %d", i, i - 1).isGreaterThan(tokens.get(i - 1));
        }
    }

    @Test
    void acquire_threeDeep_releasedOnlyByOutermostClose() throws Exception {
        LockClient owner = client();
        LockClient other = client();
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
    void acquire_waiters_grantedInArrivalOrder() throws Exception {
        LockClient holderClient = client();
        LockClient waiterClient = client("localQueueing=false"); // each waiter in the Redis queue
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
            await().atMost(scaled(10)).until(() -> entries("fifo").size() == expected);
        }
        held.close();
        for (Thread t : waiters) {
            t.join(scaled(20).toMillis());
        }
        assertThat(order).containsExactly(0, 1, 2, 3, 4, 5);
    }

    @Test
    void release_thirtyWaiters_wakesOneWaiterPerRelease() throws Exception {
        LockClient a = client("localQueueing=false");
        LockClient b = client("localQueueing=false");
        Lease held = a.lock("herd").acquire();
        int waiters = 30;
        List<CompletableFuture<Lease>> pending = new ArrayList<>();
        for (int i = 0; i < waiters; i++) {
            pending.add((i % 2 == 0 ? a : b).lock("herd").acquireAsync(Duration.ofMinutes(1)));
        }
        await().atMost(scaled(10)).until(() -> entries("herd").size() == waiters + 1);
        long publishesBefore = publishCount();
        held.close();
        List<CompletableFuture<Lease>> waiting = new ArrayList<>(pending);
        for (int released = 1; released <= waiters; released++) {
            await().atMost(scaled(10)).until(() -> waiting.stream().anyMatch(CompletableFuture::isDone));
            List<CompletableFuture<Lease>> granted = waiting.stream().filter(CompletableFuture::isDone).toList();
            // Exactly one waiter is granted per release, and the server published exactly one wake-up.
            assertThat(granted).hasSize(1);
            assertThat(publishCount() - publishesBefore).isEqualTo(released);
            waiting.removeAll(granted);
            assertThat(waiting).noneMatch(CompletableFuture::isDone);
            granted.get(0).get().close();
        }
        // The last release had nobody to wake.
        assertThat(publishCount() - publishesBefore).isEqualTo(waiters);
        assertThat(entries("herd")).isEmpty();
    }

    @Test
    void tryAcquire_zeroWaitWhileHeld_returnsEmptyAndLeavesNoEntry() throws Exception {
        LockClient holder = client();
        LockClient other = client();
        try (Lease held = holder.lock("busy").acquire()) {
            Optional<Lease> attempt = other.lock("busy").tryAcquire(Duration.ZERO);
            assertThat(attempt).isEmpty();
            assertThat(entries("busy")).hasSize(1);
            assertThat(held.isValid()).isTrue();
        }
    }

    @Test
    void tryAcquire_timedOut_leavesNoEntry() throws Exception {
        LockClient holder = client();
        LockClient other = client();
        try (Lease held = holder.lock("timeout").acquire()) {
            assertThat(other.lock("timeout").tryAcquire(Duration.ofMillis(300))).isEmpty();
            assertThat(entries("timeout")).hasSize(1);
            CompletableFuture<Lease> async = other.lock("timeout").acquireAsync(Duration.ofMillis(300));
            assertThatThrownBy(() -> async.get(10, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOf(LockTimeoutException.class)
                    .hasMessageContaining("lock 'timeout' on redis");
            assertThat(entries("timeout")).hasSize(1);
        }
        assertThat(keys()).isEmpty();
    }

    @Test
    void acquireAsync_cancelled_leavesNoEntry() throws Exception {
        LockClient holder = client();
        LockClient other = client();
        try (Lease held = holder.lock("cancel").acquire()) {
            CompletableFuture<Lease> async = other.lock("cancel").acquireAsync(Duration.ofMinutes(1));
            await().until(() -> entries("cancel").size() == 2);
            assertThat(async.cancel(true)).isTrue();
            await().atMost(scaled(5)).until(() -> entries("cancel").size() == 1);
        }
        try (Lease lease = other.lock("cancel").acquireAsync(Duration.ZERO).get(10, TimeUnit.SECONDS)) {
            assertThat(lease.isValid()).isTrue();
            assertThat(entries("cancel")).hasSize(1);
        }
    }

    @Test
    void acquire_interrupted_throwsAndLeavesNoEntry() throws Exception {
        LockClient holder = client();
        LockClient other = client();
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
            waiter.join(10_000);
            assertThat(thrown.get()).isInstanceOf(InterruptedException.class);
            assertThat(entries("interrupt")).hasSize(1);
        }
    }

    @Test
    void close_byNonOwnerThread_throwsAndLockStaysHeld() throws Exception {
        LockClient owner = client();
        LockClient other = client();
        Lease lease = owner.lock("owned").acquire();
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        Thread intruder = new Thread(() -> {
            try {
                lease.close();
            } catch (Throwable t) {
                thrown.set(t);
            }
        });
        intruder.start();
        intruder.join();
        assertThat(thrown.get()).isInstanceOf(IllegalMonitorStateException.class).hasMessageContaining("owned");
        assertThat(lease.isValid()).isTrue();
        assertThat(other.lock("owned").tryAcquire(Duration.ZERO)).isEmpty();
        lease.close();
        assertThat(other.lock("owned").tryAcquire(Duration.ZERO)).isPresent();
    }

    @Test
    void close_client_releasesEveryLease() throws Exception {
        LockClient first = LockClient.connect(uri(""));
        LockClient second = client();
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
        assertThatThrownBy(() -> first.lock("a")).isInstanceOf(IllegalStateException.class).hasMessageContaining("CLOSED");
    }

    @Test
    void holderKilled_nextWaiterAcquiresWithinLeaseTime() throws Exception {
        LockClient waiter = client("leaseTime=2s");
        try (ChildJvm holder = track(ChildJvm.start(LockWorkerMain.class, List.of("hold", uri("leaseTime=2s"), "crash")))) {
            long holderToken = Long.parseLong(holder.awaitLine("HOLDING", scaled(30)).split(" ")[1]);
            CompletableFuture<Lease> next = waiter.lock("crash").acquireAsync(Duration.ofMinutes(1));
            await().until(() -> entries("crash").size() == 2);
            long killedAt = System.nanoTime();
            holder.kill();
            Lease lease = next.get(30, TimeUnit.SECONDS);
            long passedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
            assertThat(lease.fencingToken()).isGreaterThan(holderToken);
            // The dead holder's lease (2 s) runs out; the waiter checks right after its deadline.
            assertThat(passedMs).isLessThan(scaled(5).toMillis());
            lease.close();
        }
    }

    @Test
    void asJavaLock_behavesAsLock() throws Exception {
        LockClient client = client();
        LockClient other = client();
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
        assertThat(entries("jlock")).isEmpty();
    }

    @Test
    void withLock_runsActionOrTimesOut() throws Exception {
        LockClient client = client();
        LockClient other = client();
        assertThat(client.withLock("job", Duration.ofSeconds(5), () -> entries("job").size())).isEqualTo(1);
        AtomicInteger ran = new AtomicInteger();
        try (Lease held = other.lock("job").acquire()) {
            assertThatThrownBy(() -> client.withLock("job", Duration.ofMillis(100), ran::incrementAndGet))
                    .isInstanceOf(LockTimeoutException.class)
                    .hasMessageContaining("lock 'job' on redis");
        }
        assertThat(ran).hasValue(0);
    }

    @Test
    void capabilities_areTruthful() {
        assertThat(client().capabilities())
                .contains(Capability.EXCLUSIVE, Capability.FAIR, Capability.FENCING_TOKENS, Capability.READ_WRITE,
                        Capability.SEMAPHORE, Capability.MULTI_LOCK, Capability.LOST_DETECTION,
                        Capability.CRASH_RELEASE, Capability.NO_HERD, Capability.RENEWAL);
        assertThat(client("fair=false").capabilities()).doesNotContain(Capability.FAIR).contains(Capability.EXCLUSIVE);
    }

    @Test
    void fencingTokens_increaseAcrossClientsAndAfterTheKeysAreGone() throws Exception {
        List<Long> tokens = new ArrayList<>();
        LockClient[] clients = {client(), client(), client()};
        for (int i = 0; i < 9; i++) {
            try (Lease lease = clients[i % 3].lock("fence").acquire()) {
                tokens.add(lease.fencingToken());
            }
            // Between grants the lock is idle and its keys are deleted: tokens still increase.
            assertThat(keys()).isEmpty();
        }
        assertThat(tokens).isSorted().doesNotHaveDuplicates();
        assertThat(tokens.get(0)).isPositive();
    }

    @Test
    void unfair_holderAndWaiters_stillExcludeEachOther() throws Exception {
        Contention.Result r = Contention.run(new LockClient[] {client("fair=false"), client("fair=false")}, "unfair",
                4, 100, Duration.ofMinutes(2));
        assertThat(r.checker().counter()).isEqualTo(400);
        assertThat(r.checker().violations()).isZero();
        assertThat(r.store().rejectedWrites()).isZero();
    }
}
