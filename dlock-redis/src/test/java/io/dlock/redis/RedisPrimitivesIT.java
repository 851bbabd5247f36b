package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.DistributedLock;
import io.dlock.DistributedReadWriteLock;
import io.dlock.DistributedSemaphore;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.MutualExclusionChecker;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Read-write locks, semaphores and multi-locks on Redis. */
class RedisPrimitivesIT extends RedisTestSupport {

    @Test
    void readLock_twoClients_shareButExcludeWriter() throws Exception {
        LockClient a = client();
        LockClient b = client();
        DistributedReadWriteLock rwA = a.readWriteLock("rw");
        DistributedReadWriteLock rwB = b.readWriteLock("rw");
        DistributedReadWriteLock rwC = client().readWriteLock("rw");
        Lease r1 = rwA.readLock().acquire();
        Lease r2 = rwB.readLock().tryAcquire(Duration.ZERO).orElseThrow();
        assertThat(rwC.writeLock().tryAcquire(Duration.ZERO)).isEmpty();
        CompletableFuture<Lease> writer = rwC.writeLock().acquireAsync(Duration.ofMinutes(1));
        await().until(() -> rwQueue("rw").size() == 3); // the writer stands in the queue
        // A reader arriving after a queued writer waits behind it (fair: no writer starvation).
        CompletableFuture<Lease> lateReader = rwA.readLock().acquireAsync(Duration.ofMinutes(1));
        r1.close();
        assertThat(writer).isNotDone();
        r2.close();
        Lease w = writer.get(10, TimeUnit.SECONDS);
        assertThat(w.fencingToken()).isGreaterThan(r2.fencingToken());
        assertThat(lateReader).isNotDone();
        w.close();
        lateReader.get(10, TimeUnit.SECONDS).close();
    }

    private List<?> rwQueue(String lock) {
        return queue(server, prefix + ":{" + lock + "}:rw");
    }

    @Test
    void writeLock_fourThreads_exclusiveAgainstReaders() throws Exception {
        LockClient[] clients = {client(), client()};
        MutualExclusionChecker writers = new MutualExclusionChecker();
        AtomicInteger readersInside = new AtomicInteger();
        AtomicInteger overlap = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                DistributedReadWriteLock rw = clients[t % 2].readWriteLock("mix");
                boolean writer = t < 2;
                String who = "t" + t;
                done.add(pool.submit(() -> {
                    for (int i = 0; i < 60; i++) {
                        if (writer) {
                            try (Lease l = rw.writeLock().acquire()) {
                                writers.enter(who);
                                if (readersInside.get() > 0) {
                                    overlap.incrementAndGet();
                                }
                                writers.incrementUnsafely();
                                writers.exit(who);
                            }
                        } else {
                            try (Lease l = rw.readLock().acquire()) {
                                readersInside.incrementAndGet();
                                if (writers.inside() > 0) {
                                    overlap.incrementAndGet();
                                }
                                readersInside.decrementAndGet();
                            }
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(2, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(writers.counter()).isEqualTo(120);
        assertThat(writers.violations()).isZero();
        assertThat(overlap).hasValue(0);
    }

    @Test
    void readLock_underOwnWriteLock_downgradesEvenWithAWriterQueued() throws Exception {
        LockClient owner = client();
        LockClient other = client();
        DistributedReadWriteLock rw = owner.readWriteLock("down");
        Lease write = rw.writeLock().acquire();
        CompletableFuture<Lease> queuedWriter = other.readWriteLock("down").writeLock().acquireAsync(Duration.ofMinutes(1));
        await().until(() -> rwQueue("down").size() == 2);
        // The read overtakes the queued writer: waiting for it would wait for ourselves.
        Lease read = rw.readLock().tryAcquire(Duration.ofSeconds(5)).orElseThrow();
        write.close();
        // Still read-locked: the queued writer must not get in.
        assertThat(other.readWriteLock("down").readLock().tryAcquire(Duration.ZERO)).isEmpty();
        await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(5)).until(() -> !queuedWriter.isDone());
        read.close();
        queuedWriter.get(10, TimeUnit.SECONDS).close();
    }

    @Test
    void writeLock_underOwnReadLock_isRefused() throws Exception {
        DistributedReadWriteLock rw = client().readWriteLock("up");
        try (Lease read = rw.readLock().acquire()) {
            assertThatThrownBy(() -> rw.writeLock().tryAcquire(Duration.ZERO))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("upgrade");
        }
    }

    @Test
    void semaphore_permitsAreCountedAcrossClients() throws Exception {
        LockClient a = client();
        LockClient b = client();
        DistributedSemaphore semA = a.semaphore("pool", 3);
        DistributedSemaphore semB = b.semaphore("pool", 3);
        Lease two = semA.acquire(2);
        Lease one = semB.tryAcquire(1, Duration.ZERO).orElseThrow();
        assertThat(semB.tryAcquire(1, Duration.ZERO)).isEmpty();
        CompletableFuture<Lease> waiting = CompletableFuture.supplyAsync(() -> {
            try {
                return semB.tryAcquire(2, Duration.ofSeconds(30)).orElseThrow();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(5)).until(() -> !waiting.isDone());
        two.close();
        Lease got = waiting.get(10, TimeUnit.SECONDS);
        assertThat(got.fencingToken()).isGreaterThan(one.fencingToken());
        got.close();
        one.close();
    }

    @Test
    void semaphore_disagreeingTotal_isRefusedClearly() throws Exception {
        LockClient a = client();
        LockClient b = client();
        try (Lease held = a.semaphore("total", 3).acquire(1)) {
            assertThatThrownBy(() -> b.semaphore("total", 5).tryAcquire(1, Duration.ofSeconds(2)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("in use with 3 permits")
                    .hasMessageContaining("5");
            assertThat(held.isValid()).isTrue();
        }
    }

    @Test
    void multiLock_allOrNothing() throws Exception {
        LockClient a = client();
        LockClient b = client();
        DistributedLock both = a.multiLock(List.of("m1", "m2"));
        try (Lease lease = both.acquire()) {
            assertThat(b.lock("m1").tryAcquire(Duration.ZERO)).isEmpty();
            assertThat(b.lock("m2").tryAcquire(Duration.ZERO)).isEmpty();
        }
        try (Lease m2 = b.lock("m2").acquire()) {
            assertThat(both.tryAcquire(Duration.ofMillis(200))).isEmpty();
            assertThat(b.lock("m1").tryAcquire(Duration.ZERO)).isPresent(); // m1 was given back
        }
    }
}
