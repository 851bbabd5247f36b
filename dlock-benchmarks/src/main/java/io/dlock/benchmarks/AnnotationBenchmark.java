package io.dlock.benchmarks;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.core.LockEngine;
import io.dlock.spring.boot.annotation.ActiveLocks;
import io.dlock.spring.boot.annotation.DistributedLockAdvisor;
import io.dlock.spring.boot.annotation.DistributedLockInterceptor;
import io.dlock.spring.boot.annotation.DistributedLocks;
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
import org.springframework.aop.framework.ProxyFactory;

/**
 * The starter's {@code @DistributedLock} aspect against a direct {@code acquire()}/{@code close()}
 * on the in-process backend: one uncontended acquire and release per call, so the difference is the
 * aspect's cost (Spring AOP proxy, SpEL key, lease stack, tracking for {@code /actuator/dlock}).
 * The proxy is Spring's class proxy with the starter's advisor, as in an application; no Spring
 * context is started.
 *
 * <pre>{@code
 * ./mvnw -q package -DskipTests -pl dlock-benchmarks -am
 * java -jar dlock-benchmarks/target/benchmarks.jar AnnotationBenchmark
 * }</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(1)
public class AnnotationBenchmark {
    /** The annotated bean: the same work as {@link #direct()}'s body. */
    public static class Orders {
        @io.dlock.spring.boot.annotation.DistributedLock(key = "'order:' + #orderId")
        public long spel(long orderId) {
            return DistributedLocks.currentLease().fencingToken();
        }

        @io.dlock.spring.boot.annotation.DistributedLock(key = "'order:1'")
        public long constant(long orderId) {
            return DistributedLocks.currentLease().fencingToken();
        }
    }

    private LockClient client;
    private DistributedLock lock;
    private Orders proxy;
    private DistributedLockInterceptor interceptor;

    /** A fresh in-process client and a proxied bean. */
    @Setup
    public void setUp() {
        client = LockEngine.newClient(new InProcessBackend(), LockOptions.defaults());
        lock = client.lock("order:1");
        interceptor = new DistributedLockInterceptor(() -> client, new ActiveLocks(), null);
        ProxyFactory factory = new ProxyFactory(new Orders());
        factory.setProxyTargetClass(true);
        factory.addAdvisor(new DistributedLockAdvisor(interceptor));
        proxy = (Orders) factory.getProxy();
    }

    /** Closes the aspect and the client. */
    @TearDown
    public void tearDown() {
        interceptor.close();
        client.close();
    }

    /**
     * The floor: acquire, read the token, close.
     *
     * @return the token
     * @throws InterruptedException never: nothing waits
     */
    @Benchmark
    public long direct() throws InterruptedException {
        try (Lease lease = lock.acquire()) {
            return lease.fencingToken();
        }
    }

    /**
     * Through the proxy with a SpEL key over the argument.
     *
     * @return the token
     */
    @Benchmark
    public long annotatedSpelKey() {
        return proxy.spel(1);
    }

    /**
     * Through the proxy with a literal key (parsed once, no evaluation per call).
     *
     * @return the token
     */
    @Benchmark
    public long annotatedConstantKey() {
        return proxy.constant(1);
    }
}
