package io.dlock.benchmarks;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.core.LockEngine;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
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
 * Lease bookkeeping: one uncontended acquire and release through the engine over {@link
 * InProcessBackend}, whose replies complete on the calling thread. With no I/O, the time and the
 * allocation are the engine's own per acquire (acquisition id, state machine, hold registry, lease
 * handle, futures).
 *
 * <pre>{@code
 * ./mvnw -q package -DskipTests -pl dlock-benchmarks -am
 * java -jar dlock-benchmarks/target/benchmarks.jar LeaseBenchmark -prof gc
 * }</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class LeaseBenchmark {
    private LockClient client;
    private DistributedLock lock;

    /** Creates a client over a fresh in-process backend. */
    @Setup
    public void setUp() {
        client = LockEngine.newClient(new InProcessBackend(), LockOptions.defaults());
        lock = client.lock("lease-bench");
    }

    /** Closes the client. */
    @TearDown
    public void tearDown() {
        client.close();
    }

    /**
     * {@code lock.acquire()} then {@code lease.close()}, the blocking path users call.
     *
     * @return the fencing token, so the work is not eliminated
     * @throws InterruptedException never: nothing waits
     */
    @Benchmark
    public long acquireRelease() throws InterruptedException {
        try (Lease lease = lock.acquire()) {
            return lease.fencingToken();
        }
    }

    /**
     * {@code lock.tryAcquire(Duration.ZERO)} then close: the timed path, which also arms a timer.
     *
     * @return the fencing token
     * @throws InterruptedException never: nothing waits
     */
    @Benchmark
    public long tryAcquireRelease() throws InterruptedException {
        try (Lease lease = lock.tryAcquire(Duration.ZERO).orElseThrow()) {
            return lease.fencingToken();
        }
    }

    /**
     * {@code lock.acquireAsync(...)}, joined, then close: the lease owns itself, and the future
     * completes on the client's callback pool, so this includes one thread hand-off.
     *
     * @return the fencing token
     */
    @Benchmark
    public long acquireAsyncRelease() {
        Lease lease = lock.acquireAsync(Duration.ofSeconds(10)).join();
        try {
            return lease.fencingToken();
        } finally {
            lease.close();
        }
    }
}
