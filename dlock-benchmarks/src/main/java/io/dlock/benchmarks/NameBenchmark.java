package io.dlock.benchmarks;

import io.dlock.DistributedLock;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.core.LockEngine;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Name validation, through the public path: {@code client.lock(name)} validates the name (the
 * rules are package-private in the engine) and creates the handle. The invalid case measures the
 * cost of a clear {@code IllegalArgumentException}.
 *
 * <pre>{@code
 * ./mvnw -q package -DskipTests -pl dlock-benchmarks -am
 * java -jar dlock-benchmarks/target/benchmarks.jar NameBenchmark -prof gc
 * }</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class NameBenchmark {
    /** A short name, and a long one of the kind multi-tenant services build. */
    @Param({"orders", "tenant-4711:orders:eu-west-1:2026-11-21:shard-07:invoice-batch-0042"})
    public String name;

    private LockClient client;

    /** Creates a client over a fresh in-process backend. */
    @Setup
    public void setUp() {
        client = LockEngine.newClient(new InProcessBackend(), LockOptions.defaults());
    }

    /** Closes the client. */
    @TearDown
    public void tearDown() {
        client.close();
    }

    /**
     * Validates {@link #name} and creates its handle.
     *
     * @return the handle
     */
    @Benchmark
    public DistributedLock validName() {
        return client.lock(name);
    }

    /**
     * Refuses {@link #name} with a slash appended: the exception and its message.
     *
     * @return the exception's message
     */
    @Benchmark
    public String invalidName() {
        try {
            client.lock(name + "/x");
            throw new AssertionError("accepted an invalid name");
        } catch (IllegalArgumentException e) {
            return java.util.Objects.requireNonNull(e.getMessage(), "a refusal has a message");
        }
    }
}
