package io.dlock.benchmarks;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.core.LockEngine;
import io.micrometer.core.instrument.observation.DefaultMeterObservationHandler;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.micrometer.observation.ObservationRegistry;
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
 * What the engine's instrumentation costs per uncontended acquire and release, with no I/O to hide
 * it: {@link InProcessBackend}, metrics off, on (a Micrometer {@code SimpleMeterRegistry}), on
 * with per-lock-name tags, or on with each acquire an observation. The W1 figure on a real Redis (metrics on vs off) is the side-by-side
 * runner's {@code dlock-redis-metrics} implementation; this benchmark gives the absolute cost
 * behind that ratio.
 *
 * <pre>{@code
 * ./mvnw -q package -DskipTests -pl dlock-benchmarks -am
 * java -jar dlock-benchmarks/target/benchmarks.jar MetricsBenchmark -prof gc
 * }</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
public class MetricsBenchmark {
    /**
     * {@code off}, {@code metrics}, {@code metricsPerLockName}, or {@code observations}: metrics
     * and an observation registry whose meter handler records the acquire timer, as Spring Boot
     * sets them up.
     */
    @Param({"off", "metrics", "metricsPerLockName", "observations"})
    public String instrumentation;

    private LockClient client;
    private DistributedLock lock;

    /** Creates a client over a fresh in-process backend with the chosen instrumentation. */
    @Setup
    public void setUp() {
        LockOptions.Builder options = LockOptions.builder();
        switch (instrumentation) {
            case "off" -> {}
            case "metrics" -> options.metricsRegistry(new SimpleMeterRegistry());
            case "metricsPerLockName" -> options.metricsRegistry(new SimpleMeterRegistry())
                    .metricsPerLockName(true);
            case "observations" -> {
                SimpleMeterRegistry meters = new SimpleMeterRegistry();
                ObservationRegistry observations = ObservationRegistry.create();
                observations.observationConfig().observationHandler(new DefaultMeterObservationHandler(meters));
                options.metricsRegistry(meters).observationRegistry(observations);
            }
            default -> throw new IllegalArgumentException("unknown instrumentation: " + instrumentation);
        }
        client = LockEngine.newClient(new InProcessBackend(), options.build());
        lock = client.lock("metrics-bench");
    }

    /** Closes the client. */
    @TearDown
    public void tearDown() {
        client.close();
    }

    /**
     * {@code lock.acquire()} then {@code lease.close()}.
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
}
