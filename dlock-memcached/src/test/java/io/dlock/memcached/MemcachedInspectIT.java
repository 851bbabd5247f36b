package io.dlock.memcached;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
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
import java.net.InetAddress;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * The operator view on a real memcached: the inspector contract (inspect through the LRU crawler's
 * dump, forced release with a CAS on the inspected grant, watch by polling), and what memcached
 * records besides: host and pid from each client's info key, the waiters' arrival order.
 */
class MemcachedInspectIT extends MemcachedTestSupport implements InspectorContract {

    @Override
    public LockInspector inspector() {
        BackendUri parsed = BackendUri.parse(URI.create(uri("")), LockOptions.defaults(), MemcachedUri.PARAMETERS);
        LockBackend backend = track(new MemcachedBackendProvider().open(parsed));
        return backend.inspector().orElseThrow();
    }

    @Override
    public String longHold() {
        return "leaseTime=60s";
    }

    /** Not applicable: memcached offers exclusive locks only; the refusal leaves nothing to inspect. */
    @Test
    @Override
    public void inspect_readWriteAndSemaphore_showKindModesPermitsAndQueue() {
        LockClient c = newClient();
        assertThatThrownBy(() -> c.readWriteLock("catalog")).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> c.semaphore("pool", 3)).isInstanceOf(UnsupportedOperationException.class);
        assertThat(inspector().inspect("")).isEmpty();
    }

    private static LockSnapshot only(List<LockSnapshot> locks) {
        assertThat(locks).hasSize(1);
        return locks.get(0);
    }

    private static LockSnapshot awaitWaiters(LockInspector inspector, String name, int waiters) {
        return await().atMost(scaled(10))
                .until(() -> only(inspector.inspect(name)), s -> s.waiters().size() == waiters);
    }

    private static String localHost() throws Exception {
        return InetAddress.getLocalHost().getHostName();
    }

    @Test
    void inspect_holderAndTwoWaiters_showsHostPidGrantTimeTtlAndWaitersInArrivalOrder() throws Exception {
        LockInspector inspector = inspector();
        assertThat(inspector.holderNoticesForcedRelease()).isTrue();
        Lease held = client("leaseTime=3s").lock("orders").acquire();
        CompletableFuture<Lease> second = client("leaseTime=3s").lock("orders").acquireAsync(scaled(30));
        awaitWaiters(inspector, "orders", 1);
        CompletableFuture<Lease> third = client("leaseTime=3s").lock("orders").acquireAsync(scaled(30));
        LockSnapshot s = awaitWaiters(inspector, "orders", 2);

        EntrySnapshot holder = s.holders().get(0);
        assertThat(holder.leaseToken()).isEqualTo(held.fencingToken());
        assertThat(holder.host()).isEqualTo(localHost());
        assertThat(holder.pid()).isEqualTo(ProcessHandle.current().pid());
        assertThat(holder.connected()).as("memcached cannot tell").isNull();
        assertThat(holder.leaseLeft()).isNotNull().isLessThanOrEqualTo(Duration.ofSeconds(4));
        assertThat(holder.since()).isBetween(Instant.now().minusSeconds(60), Instant.now());
        assertThat(s.waiters())
                .extracting(EntrySnapshot::pid)
                .containsOnly(ProcessHandle.current().pid());
        assertThat(s.waiters()).extracting(EntrySnapshot::host).containsOnly(localHost());
        assertThat(s.waiters().get(0).since())
                .isNotNull()
                .isBeforeOrEqualTo(s.waiters().get(1).since());
        // After the first renewal (a third of the lease) the lock key itself carries token and time.
        await().atMost(scaled(10))
                .until(() -> server.command("mg " + prefix + ":l:orders v")
                                .split("\n")[1]
                                .split(" ")
                                .length
                        == 4);
        assertThat(only(inspector.inspect("orders")).holders().get(0).leaseToken())
                .isEqualTo(held.fencingToken());

        held.close();
        second.get().close();
        third.get().close();
        await().atMost(scaled(10)).until(() -> inspector.inspect(""), List::isEmpty);
    }

    @Test
    void inspect_prefix_listsMatchingNamesInOrder() throws Exception {
        LockInspector inspector = inspector();
        Lease a = client().lock("b-two").acquire();
        Lease b = client().lock("a-one").acquire();
        Lease c = client().lock("b-one").acquire();

        assertThat(inspector.inspect("")).extracting(LockSnapshot::name).containsExactly("a-one", "b-one", "b-two");
        assertThat(inspector.inspect("b-")).extracting(LockSnapshot::name).containsExactly("b-one", "b-two");
        assertThat(inspector.inspect("c")).isEmpty();
        a.close();
        b.close();
        c.close();
        assertThat(inspector.inspect("")).isEmpty();
    }

    @Test
    void forceRelease_deadHolder_showsItsHostAndPid() throws Exception {
        LockInspector inspector = inspector();
        ChildJvm child = track(ChildJvm.start(LockWorker.class, List.of("hold", uri(longHold()), "dead")));
        long deadToken = Long.parseLong(child.awaitLine("HOLDING", scaled(30)).split(" ")[1]);
        long childPid = child.pid();
        child.kill();
        EntrySnapshot holder = only(inspector.inspect("dead")).holders().get(0);
        assertThat(holder.pid()).isEqualTo(childPid);
        assertThat(holder.host()).isEqualTo(localHost());
        assertThat(holder.leaseToken()).isEqualTo(deadToken);
        assertThat(holder.leaseLeft()).isGreaterThan(Duration.ofSeconds(30));

        assertThat(inspector.forceRelease("dead", List.of(holder.key()))).containsExactly(holder.key());

        assertThat(inspector.inspect("dead")).isEmpty();
        // A killed client cannot delete its info key; it would live out its TTL.
        assertThat(server.command("md " + MemcachedBackend.infoKey(holder.clientId())))
                .isEqualTo("HD");
    }

    @Test
    void forceRelease_keyWithoutAcquisition_isRefused() throws Exception {
        LockInspector inspector = inspector();
        Lease held = client().lock("kept").acquire();
        assertThatThrownBy(() -> inspector.forceRelease("kept", List.of(prefix + ":l:kept#")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no entry of lock 'kept'");
        assertThat(held.isValid()).isTrue();
        held.close();
    }
}
