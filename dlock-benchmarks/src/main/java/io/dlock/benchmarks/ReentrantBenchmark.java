package io.dlock.benchmarks;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.core.LockEngine;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Reentrant re-acquire: the owner thread already holds the lock, and acquires and closes it again.
 * This never reaches the backend, so it is pure engine cost: the hold lookup, the validity check,
 * one nested lease handle.
 *
 * <pre>{@code
 * ./mvnw -q package -DskipTests -pl dlock-benchmarks -am
 * java -jar dlock-benchmarks/target/benchmarks.jar ReentrantBenchmark -prof gc
 * }</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class ReentrantBenchmark {
    private LockClient client;
    private DistributedLock lock;
    /** Taken by the first benchmark call, on the benchmark thread (which then owns it). */
    private @Nullable Lease outer;

    /** Creates a client over a fresh in-process backend. */
    @Setup
    public void setUp() {
        client = LockEngine.newClient(new InProcessBackend(), LockOptions.defaults());
        lock = client.lock("reentrant-bench");
    }

    /** Closes the client, which releases the outer lease. */
    @TearDown
    public void tearDown() {
        client.close();
    }

    /**
     * One nested acquire and close while the outer lease is held.
     *
     * @return the nested lease's fencing token (the outer one's)
     * @throws InterruptedException never: nothing waits
     */
    @Benchmark
    public long reacquire() throws InterruptedException {
        if (outer == null) {
            outer = lock.acquire(); // on the benchmark thread, which then owns it
        }
        try (Lease nested = lock.acquire()) {
            return nested.fencingToken();
        }
    }

    /**
     * {@code isHeldByCurrentThread()}, the check guards and assertions make.
     *
     * @return true
     * @throws InterruptedException never: nothing waits
     */
    @Benchmark
    public boolean isHeldByCurrentThread() throws InterruptedException {
        if (outer == null) {
            outer = lock.acquire();
        }
        return lock.isHeldByCurrentThread();
    }
}
