package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Capability;
import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.LockTimeoutException;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.Contention;
import io.dlock.testkit.MutualExclusionChecker;
import io.dlock.testkit.Timing;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Lock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ZooKeeperLockIT extends ZooKeeperTestSupport {

    @Test
    void acquire_twoClientsEightThreads_counterExact() throws Exception {
        int threads = 8;
        int perThread = 250; // 2,000 increments in total
        Contention.Result r = Contention.run(new LockClient[] {client(), client()}, "counter", threads, perThread,
                Duration.ofMinutes(2));
        MutualExclusionChecker checker = r.checker();
        assertThat(checker.counter()).isEqualTo(threads * perThread);
        assertThat(checker.violations()).isZero();
        assertThat(checker.maxConcurrent()).isEqualTo(1);
        assertThat(r.store().rejectedWrites()).isZero();
        assertThat(children("counter")).isEmpty();
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
                        List.of("count", uri("sessionTimeout=10s"), "shared", counter.toString(), "" + iterations))));
            }
            for (ChildJvm jvm : jvms) {
                jvm.awaitLine("DONE", Timing.scale(Duration.ofSeconds(90)));
                assertThat(jvm.waitFor(Timing.scale(Duration.ofSeconds(20)))).isZero();
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
        assertThat(children("reentrant")).hasSize(1); // re-entry made no server round trip
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
        LockClient waiterClient = client("sessionTimeout=10s&localQueueing=false"); // each waiter in ZooKeeper
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
            await().atMost(Timing.scale(Duration.ofSeconds(10))).until(() -> children("fifo").size() == expected);
        }
        held.close();
        for (Thread t : waiters) {
            t.join(Timing.scale(Duration.ofSeconds(20)).toMillis());
        }
        assertThat(order).containsExactly(0, 1, 2, 3, 4, 5);
    }

    @Test
    void release_thirtyWaiters_wakesOneWaiterPerRelease() throws Exception {
        LockClient a = client("sessionTimeout=10s&localQueueing=false");
        LockClient b = client("sessionTimeout=10s&localQueueing=false");
        Lease held = a.lock("herd").acquire();
        int watchesBefore = server.watchCount();
        int waiters = 30;
        List<CompletableFuture<Lease>> pending = new ArrayList<>();
        for (int i = 0; i < waiters; i++) {
            pending.add((i % 2 == 0 ? a : b).lock("herd").acquireAsync(Duration.ofMinutes(1)));
        }
        await().atMost(Timing.scale(Duration.ofSeconds(10)))
                .until(() -> server.watchCount() - watchesBefore == waiters);
        // Every waiter watches a different node: its immediate predecessor.
        assertThat(children("herd")).hasSize(waiters + 1);

        held.close();
        List<CompletableFuture<Lease>> waiting = new ArrayList<>(pending);
        for (int released = 1; released <= 5; released++) {
            // Exactly one waiter is granted per release, whichever stood first in the queue.
            await().atMost(Timing.scale(Duration.ofSeconds(10))).until(() -> waiting.stream().anyMatch(CompletableFuture::isDone));
            List<CompletableFuture<Lease>> granted = waiting.stream().filter(CompletableFuture::isDone).toList();
            assertThat(granted).hasSize(1);
            waiting.removeAll(granted);
            int expectedWatches = waiters - released;
            await().atMost(Timing.scale(Duration.ofSeconds(5)))
                    .until(() -> server.watchCount() - watchesBefore == expectedWatches);
            // The release fired exactly one watch; nobody else was woken or re-registered.
            assertThat(waiting).noneMatch(CompletableFuture::isDone);
            granted.get(0).get().close();
        }
        while (!waiting.isEmpty()) {
            await().atMost(Timing.scale(Duration.ofSeconds(10))).until(() -> waiting.stream().anyMatch(CompletableFuture::isDone));
            List<CompletableFuture<Lease>> granted = waiting.stream().filter(CompletableFuture::isDone).toList();
            assertThat(granted).hasSize(1);
            waiting.removeAll(granted);
            granted.get(0).get().close();
        }
        assertThat(server.watchCount()).isEqualTo(watchesBefore);
        assertThat(children("herd")).isEmpty();
    }

    @Test
    void localQueueing_thirtyWaitersOnTwoClients_oneZnodeAndOneWatchPerClient() throws Exception {
        LockClient a = client();
        LockClient b = client();
        Lease held = a.lock("local").acquire();
        int watchesBefore = server.watchCount();
        List<CompletableFuture<Lease>> pending = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            pending.add((i % 2 == 0 ? a : b).lock("local").acquireAsync(Duration.ofMinutes(1)));
        }
        // a's waiters queue behind a's holder inside the JVM; b's stand behind one b node.
        await().atMost(Timing.scale(Duration.ofSeconds(10))).until(() -> children("local").size() == 2);
        assertThat(server.watchCount() - watchesBefore).isEqualTo(1);

        long lastToken = held.fencingToken();
        held.close();
        int[] counter = {0};
        List<CompletableFuture<Lease>> waiting = new ArrayList<>(pending);
        while (!waiting.isEmpty()) {
            await().atMost(Timing.scale(Duration.ofSeconds(10))).until(() -> waiting.stream().anyMatch(CompletableFuture::isDone));
            List<CompletableFuture<Lease>> granted = waiting.stream().filter(CompletableFuture::isDone).toList();
            assertThat(granted).as("one holder at a time").hasSize(1);
            waiting.removeAll(granted);
            Lease lease = granted.get(0).get();
            assertThat(lease.fencingToken()).isGreaterThan(lastToken);
            lastToken = lease.fencingToken();
            counter[0]++;
            lease.close();
        }
        assertThat(counter[0]).isEqualTo(30);
        assertThat(children("local")).isEmpty();
        assertThat(server.watchCount()).isEqualTo(watchesBefore);
    }

    @Test
    void tryAcquire_zeroWaitWhileHeld_returnsEmptyAtOnce() throws Exception {
        LockClient holder = client();
        LockClient other = client();
        try (Lease held = holder.lock("busy").acquire()) {
            long start = System.nanoTime();
            Optional<Lease> attempt = other.lock("busy").tryAcquire(Duration.ZERO);
            long elapsedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertThat(attempt).isEmpty();
            assertThat(elapsedMs).as("one attempt, no waiting").isLessThan(Timing.scale(Duration.ofSeconds(2)).toMillis());
            assertThat(children("busy")).hasSize(1);
            assertThat(held.isValid()).isTrue();
        }
    }

    @Test
    void tryAcquire_timedOut_leavesNoChild() throws Exception {
        LockClient holder = client();
        LockClient other = client();
        try (Lease held = holder.lock("timeout").acquire()) {
            assertThat(other.lock("timeout").tryAcquire(Duration.ofMillis(300))).isEmpty();
            assertThat(children("timeout")).hasSize(1);
            CompletableFuture<Lease> async = other.lock("timeout").acquireAsync(Duration.ofMillis(300));
            assertThatThrownBy(() -> async.get(10, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause()
                    .isInstanceOf(LockTimeoutException.class)
                    .hasMessageContaining("timeout")
                    .hasMessageContaining("zookeeper");
            assertThat(children("timeout")).hasSize(1);
        }
        assertThat(children("timeout")).isEmpty();
    }

    @Test
    void acquireAsync_cancelled_leavesNoChild() throws Exception {
        LockClient holder = client();
        LockClient other = client();
        try (Lease held = holder.lock("cancel").acquire()) {
            CompletableFuture<Lease> async = other.lock("cancel").acquireAsync(Duration.ofMinutes(1));
            await().until(() -> children("cancel").size() == 2);
            assertThat(async.cancel(true)).isTrue();
            await().atMost(Timing.scale(Duration.ofSeconds(5))).until(() -> children("cancel").size() == 1);
        }
        try (Lease lease = other.lock("cancel").acquireAsync(Duration.ZERO).get(10, TimeUnit.SECONDS)) {
            assertThat(lease.isValid()).isTrue();
            assertThat(children("cancel")).hasSize(1);
        }
    }

    @Test
    void acquire_interrupted_throwsAndLeavesNoChild() throws Exception {
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
            await().until(() -> children("interrupt").size() == 2);
            waiter.interrupt();
            waiter.join(10_000);
            assertThat(thrown.get()).isInstanceOf(InterruptedException.class);
            assertThat(children("interrupt")).hasSize(1);
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
            try {
                owner.lock("owned").asJavaLock().unlock();
            } catch (Throwable t) {
                thrown.get().addSuppressed(t);
            }
        });
        intruder.start();
        intruder.join();
        assertThat(thrown.get()).isInstanceOf(IllegalMonitorStateException.class).hasMessageContaining("owned");
        assertThat(thrown.get().getSuppressed()).singleElement().isInstanceOf(IllegalMonitorStateException.class);
        assertThat(lease.isValid()).isTrue();
        assertThat(other.lock("owned").tryAcquire(Duration.ZERO)).isEmpty();
        lease.close();
        assertThat(other.lock("owned").tryAcquire(Duration.ZERO)).isPresent();
    }

    @Test
    void close_client_releasesEveryLease() throws Exception {
        LockClient first = LockClient.connect(uri("sessionTimeout=10s"));
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
    void sessionExpiry_ofHolder_invalidatesLeaseAndFiresOnLostOnce() throws Exception {
        LockClient holder = client();
        LockClient other = client();
        Lease lease = holder.lock("expiry").acquire();
        AtomicInteger lostCalls = new AtomicInteger();
        AtomicReference<LockLostException> cause = new AtomicReference<>();
        lease.onLost(e -> {
            lostCalls.incrementAndGet();
            cause.set(e);
        });
        String node = "/" + namespace + "/expiry/" + children("expiry").get(0);
        long session = rawClient().exists(node, false).getEphemeralOwner();
        server.expireSession(session);
        await().atMost(Timing.scale(Duration.ofSeconds(15))).until(() -> !lease.isValid());
        await().atMost(Duration.ofSeconds(5)).until(() -> lostCalls.get() == 1);
        assertThatThrownBy(lease::checkValid).isInstanceOf(LockLostException.class).hasMessageContaining("expiry");
        assertThat(cause.get().lockName()).isEqualTo("expiry");
        // A listener added after the loss runs at once; the first one never runs again.
        AtomicInteger late = new AtomicInteger();
        lease.onLost(e -> late.incrementAndGet());
        assertThat(late).hasValue(1);
        try (Lease next = other.lock("expiry").tryAcquire(Duration.ofSeconds(10)).orElseThrow()) {
            assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
        }
        lease.close(); // closing a lost lease is harmless
        assertThat(lostCalls).hasValue(1);
        // The client recovers: a new session serves new acquisitions.
        try (Lease again = holder.lock("expiry").tryAcquire(Duration.ofSeconds(10)).orElseThrow()) {
            assertThat(again.isValid()).isTrue();
        }
    }

    @Test
    void serverRestart_briefDisconnect_keepsLease() throws Exception {
        LockClient holder = client("sessionTimeout=20s");
        LockClient other = client("sessionTimeout=20s");
        Lease lease = holder.lock("brief").acquire();
        AtomicInteger lost = new AtomicInteger();
        lease.onLost(e -> lost.incrementAndGet());
        server.restart();
        await().atMost(Timing.scale(Duration.ofSeconds(15)))
                .ignoreExceptions()
                .until(() -> other.lock("brief").tryAcquire(Duration.ZERO).isEmpty());
        assertThat(lease.isValid()).isTrue();
        assertThat(lost).hasValue(0);
        lease.close();
        try (Lease next = other.lock("brief").tryAcquire(Duration.ofSeconds(10)).orElseThrow()) {
            assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
        }
    }

    @Test
    void holderKilled_nextWaiterAcquiresWithinSessionTimeout() throws Exception {
        LockClient waiter = client();
        try (ChildJvm holder = ChildJvm.start(LockWorkerMain.class, List.of("hold", uri("sessionTimeout=2s"), "crash"))) {
            long holderToken = Long.parseLong(holder.awaitLine("HOLDING", Timing.scale(Duration.ofSeconds(30)))
                    .split(" ")[1]);
            CompletableFuture<Lease> next = waiter.lock("crash").acquireAsync(Duration.ofMinutes(1));
            await().until(() -> children("crash").size() == 2);
            long killedAt = System.nanoTime();
            holder.kill();
            Lease lease = next.get(30, TimeUnit.SECONDS);
            long passedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
            assertThat(lease.fencingToken()).isGreaterThan(holderToken);
            // Session timeout (2 s) plus the server's expiry tick and a margin.
            assertThat(passedMs).isLessThan(Timing.scale(Duration.ofSeconds(6)).toMillis());
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
        lock.lockInterruptibly();
        lock.unlock();
        assertThatThrownBy(lock::newCondition).isInstanceOf(UnsupportedOperationException.class);
        Thread.currentThread().interrupt();
        assertThatThrownBy(lock::lockInterruptibly).isInstanceOf(InterruptedException.class);
        assertThat(Thread.interrupted()).isFalse();
        assertThat(children("jlock")).isEmpty();
    }

    @Test
    void withLock_runsActionOrTimesOut() throws Exception {
        LockClient client = client();
        LockClient other = client();
        assertThat(client.withLock("job", Duration.ofSeconds(5), () -> children("job").size())).isEqualTo(1);
        AtomicInteger ran = new AtomicInteger();
        try (Lease held = other.lock("job").acquire()) {
            assertThatThrownBy(() -> client.withLock("job", Duration.ofMillis(100), ran::incrementAndGet))
                    .isInstanceOf(LockTimeoutException.class)
                    .hasMessageContaining("lock 'job' on zookeeper");
        }
        assertThat(ran).hasValue(0);
        assertThatThrownBy(() -> client.withLock("job", Duration.ofSeconds(5), () -> {
                    throw new IllegalStateException("boom");
                }))
                .hasMessage("boom");
        assertThat(other.lock("job").tryAcquire(Duration.ZERO)).isPresent();
    }

    @Test
    void capabilities_areTruthful() {
        LockClient client = client();
        assertThat(client.capabilities())
                .contains(Capability.EXCLUSIVE, Capability.FAIR, Capability.FENCING_TOKENS, Capability.READ_WRITE,
                        Capability.SEMAPHORE, Capability.MULTI_LOCK, Capability.LOST_DETECTION,
                        Capability.CRASH_RELEASE, Capability.NO_HERD)
                .doesNotContain(Capability.RENEWAL); // the session is the lease: nothing to renew
    }

    @Test
    void fencingTokens_increaseAcrossClients() throws Exception {
        List<Long> tokens = Collections.synchronizedList(new ArrayList<>());
        LockClient[] clients = {client(), client(), client()};
        for (int i = 0; i < 9; i++) {
            try (Lease lease = clients[i % 3].lock("fence").acquire()) {
                tokens.add(lease.fencingToken());
            }
        }
        assertThat(tokens).isSorted().doesNotHaveDuplicates();
        assertThat(tokens.get(0)).isPositive();
    }

    @Test
    void acquire_manyThreadsOneClient_noHandoffLost() throws Exception {
        LockClient client = client();
        DistributedLock lock = client.lock("local");
        MutualExclusionChecker checker = new MutualExclusionChecker();
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            String who = "t" + t;
            Thread thread = new Thread(() -> {
                try {
                    start.await();
                    for (int i = 0; i < 50; i++) {
                        try (Lease lease = lock.acquire()) {
                            checker.enter(who);
                            checker.incrementUnsafely();
                            checker.exit(who);
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            thread.start();
            threads.add(thread);
        }
        start.countDown();
        for (Thread t : threads) {
            t.join(60_000);
        }
        assertThat(checker.counter()).isEqualTo(200);
        assertThat(checker.violations()).isZero();
    }
}
