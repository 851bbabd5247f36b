package io.dlock.testkit;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The mutual-exclusion workload most lock tests need: threads spread over clients take one lock in
 * turn and, inside it, increment a racy counter and write it to a fenced store with the lease's
 * token. Afterwards the counter must equal the number of critical sections, the checker must have
 * seen no overlap, and the fenced store must have refused nothing.
 *
 * <pre>{@code
 * Contention.Result r = Contention.run(new LockClient[] {a, b}, "counter", 8, 250, Duration.ofMinutes(2));
 * assertThat(r.checker().counter()).isEqualTo(8 * 250);
 * assertThat(r.checker().violations()).isZero();
 * assertThat(r.store().rejectedWrites()).isZero();
 * }</pre>
 */
public final class Contention {
    private Contention() {}

    /**
     * What a run saw.
     *
     * @param checker the overlap checker and racy counter
     * @param store the fenced store every critical section wrote to
     */
    public record Result(MutualExclusionChecker checker, FencedStore store) {}

    /**
     * Runs the workload with a fresh fenced store: thread {@code t} uses {@code clients[t %
     * clients.length]}.
     *
     * <p>Blocking: until every thread finished, at most {@code timeout}. Thread-safety: safe from
     * any thread; each call has its own threads. On failure: the first exception a worker threw
     * (for example an {@code AssertionError} or a {@code LockBackendException}), or {@link
     * TimeoutException} if the threads do not finish in time; the threads are stopped either way.
     *
     * @param clients the clients to spread the threads over
     * @param lockName the one lock every thread takes
     * @param threads how many threads
     * @param perThread how many critical sections each thread runs
     * @param timeout how long the whole run may take
     * @return the checker and the store
     * @throws Exception what a worker threw, or a timeout
     */
    public static Result run(LockClient[] clients, String lockName, int threads, int perThread, Duration timeout)
            throws Exception {
        return run(clients, lockName, threads, perThread, timeout, FencedStore.fenced());
    }

    /**
     * Runs the workload against {@code store} (for example one that already saw an older token).
     *
     * <p>Blocking, thread-safety and failure: as {@link #run(LockClient[], String, int, int,
     * Duration)}.
     *
     * @param clients the clients to spread the threads over
     * @param lockName the one lock every thread takes
     * @param threads how many threads
     * @param perThread how many critical sections each thread runs
     * @param timeout how long the whole run may take
     * @param store the store each critical section writes the counter to with its token
     * @return the checker and the store
     * @throws Exception what a worker threw, or a timeout
     */
    public static Result run(
            LockClient[] clients, String lockName, int threads, int perThread, Duration timeout, FencedStore store)
            throws Exception {
        MutualExclusionChecker checker = new MutualExclusionChecker();
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        long deadline = System.nanoTime() + timeout.toNanos();
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                DistributedLock lock = clients[t % clients.length].lock(lockName);
                String who = "client" + (t % clients.length) + "-thread" + t;
                done.add(pool.submit(() -> {
                    for (int i = 0; i < perThread; i++) {
                        try (Lease lease = lock.acquire()) {
                            checker.enter(who);
                            checker.incrementUnsafely();
                            store.write(who, lease.fencingToken(), checker.counter());
                            checker.exit(who);
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                try {
                    f.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (ExecutionException e) {
                    throw e.getCause() instanceof Exception ex ? ex : e;
                }
            }
        } finally {
            pool.shutdownNow();
        }
        return new Result(checker, store);
    }
}
