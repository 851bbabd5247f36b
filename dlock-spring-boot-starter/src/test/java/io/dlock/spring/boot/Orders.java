package io.dlock.spring.boot;

import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.spring.boot.annotation.DistributedLock;
import io.dlock.spring.boot.annotation.DistributedLocks;
import io.dlock.spring.boot.annotation.OnTimeout;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.beans.factory.ObjectProvider;

/** The annotated bean the starter's tests call through its proxy. */
public class Orders {
    /** Shared between application contexts to count across clients; guarded by the lock under test. */
    public static final class Counter {
        int value;
        final AtomicInteger inside = new AtomicInteger();
        final AtomicInteger maxInside = new AtomicInteger();

        public int value() {
            return value;
        }

        public int maxInside() {
            return maxInside.get();
        }
    }

    /** For the bean reference in a key. */
    public static final class Keys {
        public String prefix() {
            return "tenant-a:";
        }
    }

    private final Counter counter;
    private final ObjectProvider<Orders> self;

    public Orders(Counter counter, ObjectProvider<Orders> self) {
        this.counter = counter;
        this.self = self;
    }

    @DistributedLock(key = "'order:' + #orderId")
    public void increment(long orderId) {
        int now = counter.inside.incrementAndGet();
        counter.maxInside.accumulateAndGet(now, Math::max);
        int read = counter.value;
        Thread.yield(); // widen the read-modify-write window an unlocked caller would lose updates in
        counter.value = read + 1;
        counter.inside.decrementAndGet();
    }

    @DistributedLock(key = "'order:' + #p0", waitTime = "300ms")
    public long token(long orderId) {
        return DistributedLocks.currentLease().fencingToken();
    }

    @DistributedLock(key = "'order:' + #orderId", waitTime = "300ms", onTimeout = OnTimeout.SKIP)
    public String skip(long orderId) {
        return "ran";
    }

    @DistributedLock(key = "'order:' + #orderId", waitTime = "300ms", onTimeout = OnTimeout.SKIP)
    public Optional<String> skipOptional(long orderId) {
        return Optional.of("ran");
    }

    @DistributedLock(key = "'order:' + #orderId")
    public String name(long orderId) {
        return DistributedLocks.currentLease().lockName();
    }

    @DistributedLock(key = "#a0 + ':' + #a1")
    public String positional(String a, int b) {
        return DistributedLocks.currentLease().lockName();
    }

    @DistributedLock(key = "@keys.prefix() + #id")
    public String beanReference(String id) {
        return DistributedLocks.currentLease().lockName();
    }

    @DistributedLock(key = "#name")
    public String nameOrNull(String name) {
        return "ran";
    }

    /** Outer token, then the inner (reentrant, through the proxy) token. */
    @DistributedLock(key = "'order:' + #orderId", waitTime = "1s")
    public long[] reentrant(long orderId) {
        long outer = DistributedLocks.currentLease().fencingToken();
        long inner = self.getObject().token(orderId);
        return new long[] {outer, inner, DistributedLocks.currentLease().fencingToken()};
    }

    @DistributedLock(key = "'order:' + #orderId")
    public long injected(long orderId, Lease lease) {
        return lease == DistributedLocks.currentLease() ? lease.fencingToken() : -1;
    }

    /** Holds the lock until {@code go} opens, after signalling {@code entered}. */
    @DistributedLock(key = "'gate:' + #key")
    public long hold(String key, CountDownLatch entered, CountDownLatch go) throws InterruptedException {
        entered.countDown();
        if (!go.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("gate not opened");
        }
        return DistributedLocks.currentLease().fencingToken();
    }

    /** Held until the stage the caller controls completes. */
    @DistributedLock(key = "'async:' + #key", waitTime = "300ms")
    public CompletableFuture<Long> async(String key, CompletableFuture<String> gate) {
        long token = DistributedLocks.currentLease().fencingToken();
        return gate.thenApply(s -> token);
    }

    @DistributedLock(key = "'async:' + #key", waitTime = "300ms", onTimeout = OnTimeout.SKIP)
    public CompletableFuture<String> asyncSkip(String key) {
        return CompletableFuture.completedFuture("ran");
    }

    @DistributedLock(key = "'async:' + #key")
    public CompletableFuture<String> asyncUnbounded(String key) {
        return CompletableFuture.completedFuture("ran");
    }

    /** Runs past its 500 ms hold bound and reports whether its lease went invalid while it ran. */
    @DistributedLock(key = "'bounded'", leaseTime = "500ms")
    public boolean bounded() {
        Lease lease = DistributedLocks.currentLease();
        await().atMost(Duration.ofSeconds(10)).until(() -> !lease.isValid());
        return true;
    }
}
