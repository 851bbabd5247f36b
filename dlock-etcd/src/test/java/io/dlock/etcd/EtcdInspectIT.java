package io.dlock.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockSnapshot;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.InspectorContract;
import io.dlock.testkit.LockWorker;
import io.etcd.jetcd.KeyValue;
import java.net.InetAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The operator view on a real etcd: the inspector contract, and what etcd records besides. */
class EtcdInspectIT extends EtcdTestSupport implements InspectorContract {

    @Override
    public LockInspector inspector() {
        return inspector("");
    }

    private LockInspector inspector(String query) {
        BackendUri parsed = BackendUri.parse(URI.create(uri(query)), LockOptions.defaults(), EtcdUri.PARAMETERS);
        LockBackend backend = track(new EtcdBackendProvider().open(parsed));
        return backend.inspector().orElseThrow();
    }

    @Override
    public String longHold() {
        return "leaseTime=60s";
    }

    /** etcd notifies: a watch that waited for its poll interval would fail the contract's bound. */
    @Override
    public Duration watchPollInterval() {
        return Duration.ofHours(1);
    }

    private static LockSnapshot only(List<LockSnapshot> locks) {
        assertThat(locks).hasSize(1);
        return locks.get(0);
    }

    @Test
    void inspect_holder_showsLeaseHostPidSinceAndLeaseLeft() throws Exception {
        LockInspector inspector = inspector();
        Instant before = Instant.now();
        Lease held = client("leaseTime=10s").lock("orders").acquire();

        EntrySnapshot holder = only(inspector.inspect("orders")).holders().get(0);

        assertThat(holder.pid()).isEqualTo(ProcessHandle.current().pid());
        assertThat(holder.host()).isEqualTo(InetAddress.getLocalHost().getHostName());
        assertThat(holder.since())
                .isBetween(before.minusSeconds(1), Instant.now().plusSeconds(1));
        assertThat(holder.leaseLeft()).isPositive().isLessThanOrEqualTo(Duration.ofSeconds(10));
        assertThat(holder.connected()).isTrue();
        assertThat(holder.leaseToken()).isEqualTo(held.fencingToken());
        KeyValue kv = kvs(prefix + "//orders/x/").get(0);
        assertThat(holder.clientId()).isEqualTo(Long.toHexString(kv.getLease()));
        assertThat(holder.key()).isEqualTo(kv.getKey().toString(StandardCharsets.UTF_8) + "@" + kv.getCreateRevision());
        held.close();
    }

    @Test
    void inspect_deadHolder_showsItsPidDisconnectedWithItsLeaseLeft_andForceReleaseLetsTheWaiterIn() throws Exception {
        LockInspector inspector = inspector();
        ChildJvm child = track(ChildJvm.start(LockWorker.class, List.of("hold", uri(longHold()), "dead")));
        long deadToken = Long.parseLong(child.awaitLine("HOLDING", scaled(30)).split(" ")[1]);
        long deadPid = child.pid();
        child.kill();
        // No keep-alive for more than EtcdInspector.KEEP_ALIVE_SLACK_S seconds.
        EntrySnapshot dead = await().atMost(scaled(15))
                .until(
                        () -> only(inspector.inspect("dead")).holders().get(0),
                        e -> Boolean.FALSE.equals(e.connected()));
        assertThat(dead.pid()).isEqualTo(deadPid);
        assertThat(dead.leaseToken()).isEqualTo(deadToken);
        assertThat(dead.leaseLeft()).isGreaterThan(Duration.ofSeconds(30));
        CompletableFuture<Lease> waiter = client("leaseTime=5s").lock("dead").acquireAsync(scaled(60));
        await().atMost(scaled(10))
                .until(() -> only(inspector.inspect("dead")).waiters().size() == 1);

        assertThat(inspector.forceRelease("dead", List.of(dead.key()))).containsExactly(dead.key());

        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(deadToken);
        next.close();
    }

    @Test
    void forceRelease_aWaitersKey_removesNothing() throws Exception {
        LockInspector inspector = inspector();
        Lease held = client("").lock("q").acquire();
        CompletableFuture<Lease> waiter = client("").lock("q").acquireAsync(scaled(30));
        LockSnapshot s = await().atMost(scaled(10))
                .until(() -> only(inspector.inspect("q")), l -> l.waiters().size() == 1);

        assertThat(inspector.forceRelease("q", List.of(s.waiters().get(0).key())))
                .isEmpty();

        assertThat(only(inspector.inspect("q")).waiters())
                .extracting(EntrySnapshot::key)
                .containsExactly(s.waiters().get(0).key());
        assertThat(waiter).isNotDone();
        held.close();
        waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS).close();
    }

    @Test
    void forceRelease_anOldKeyOfAClientThatReusedIt_removesNotTheNewGrant() throws Exception {
        LockInspector inspector = inspector();
        LockClient c = client("");
        Lease first = c.lock("reuse").acquire();
        String oldKey = only(inspector.inspect("reuse")).holders().get(0).key();
        first.close();
        Lease second = c.lock("reuse").acquire();
        String newKey = only(inspector.inspect("reuse")).holders().get(0).key();
        assertThat(newKey.substring(0, newKey.indexOf('@')))
                .as("the client reuses its etcd key")
                .isEqualTo(oldKey.substring(0, oldKey.indexOf('@')));

        assertThat(inspector.forceRelease("reuse", List.of(oldKey))).isEmpty();

        assertThat(second.isValid()).isTrue();
        assertThat(only(inspector.inspect("reuse")).holders())
                .extracting(EntrySnapshot::key)
                .containsExactly(newKey);
        second.close();
    }

    @Test
    void forceRelease_withLockDelay_isAReleaseNotALoss_theWaiterIsGrantedAtOnce() throws Exception {
        LockInspector inspector = inspector("lockDelay=60s");
        Lease stuck = client("lockDelay=60s&leaseTime=2s").lock("delayed").acquire();
        CompletableFuture<Lease> waiter =
                client("lockDelay=60s&leaseTime=2s").lock("delayed").acquireAsync(scaled(30));
        LockSnapshot s = await().atMost(scaled(10))
                .until(
                        () -> only(inspector.inspect("delayed")),
                        l -> l.waiters().size() == 1);
        assertThat(keys(prefix + "//delayed/d/")).hasSize(1);

        assertThat(inspector.forceRelease("delayed", List.of(s.holders().get(0).key())))
                .hasSize(1);

        // Well before the 60 s delay: the holder's lock-delay key went with its entry.
        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(stuck.fencingToken());
        await().atMost(scaled(10)).until(() -> !stuck.isValid());
        stuck.close();
        next.close();
    }
}
