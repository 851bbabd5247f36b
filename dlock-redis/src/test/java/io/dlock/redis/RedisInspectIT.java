package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockSnapshot;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.InspectorContract;
import io.dlock.testkit.LockWorker;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The operator view on a real redis-server: the inspector contract, and what Redis records besides. */
class RedisInspectIT extends RedisTestSupport implements InspectorContract {

    @Override
    public LockInspector inspector() {
        BackendUri parsed = BackendUri.parse(URI.create(uri("")), LockOptions.defaults(), RedisUri.PARAMETERS);
        LockBackend backend = track(new RedisBackendProvider().open(parsed));
        return backend.inspector().orElseThrow();
    }

    @Override
    public String longHold() {
        return "leaseTime=60s";
    }

    @Test
    void inspect_holder_showsTheLeaseLeftWithinItsLeaseTime() throws Exception {
        LockInspector inspector = inspector();
        Lease held = client("leaseTime=10s").lock("orders").acquire();
        var holder = inspector.inspect("orders").get(0).holders().get(0);
        assertThat(holder.connected()).isTrue();
        assertThat(holder.leaseLeft()).isPositive().isLessThanOrEqualTo(Duration.ofSeconds(10));
        held.close();
    }

    @Test
    void forceRelease_deadHolder_isShownDisconnectedWithItsLeaseLeft() throws Exception {
        LockInspector inspector = inspector();
        ChildJvm child = track(ChildJvm.start(LockWorker.class, List.of("hold", uri(longHold()), "dead")));
        long deadToken = Long.parseLong(child.awaitLine("HOLDING", scaled(30)).split(" ")[1]);
        child.kill();
        LockSnapshot s = await().atMost(scaled(10))
                .until(
                        () -> inspector.inspect("dead").get(0),
                        l -> Boolean.FALSE.equals(l.holders().get(0).connected()));
        assertThat(s.holders().get(0).leaseToken()).isEqualTo(deadToken);
        assertThat(s.holders().get(0).leaseLeft()).isGreaterThan(Duration.ofSeconds(30));
        CompletableFuture<Lease> waiter = client("leaseTime=5s").lock("dead").acquireAsync(scaled(60));
        assertThat(inspector.forceRelease("dead", List.of(s.holders().get(0).key())))
                .hasSize(1);
        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(deadToken);
        next.close();
    }
}
