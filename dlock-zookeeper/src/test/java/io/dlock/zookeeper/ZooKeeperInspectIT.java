package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockLostException;
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
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The operator view on a real ZooKeeper: the inspector contract (sessions have no lease time left),
 * the creator's host and pid from each node's data, and a forced release noticed by a live holder at
 * its next renewal (an existence check of its node).
 */
class ZooKeeperInspectIT extends ZooKeeperTestSupport implements InspectorContract {

    @Override
    public LockInspector inspector() {
        BackendUri parsed = BackendUri.parse(URI.create(uri("")), LockOptions.defaults(), Set.of());
        LockBackend backend = track(new ZooKeeperBackendProvider().open(parsed));
        return backend.inspector().orElseThrow();
    }

    @Override
    public String longHold() {
        return "sessionTimeout=60s";
    }

    /** A lease time of 3 s: the holder checks its node every second, so a forced release is noticed soon. */
    @Override
    public String shortLease() {
        return "sessionTimeout=2s&leaseTime=3s";
    }

    @Override
    public boolean reportsLeaseLeft() {
        return false;
    }

    /** Watches drive it: a poll interval this long would miss every step. */
    @Override
    public Duration watchPollInterval() {
        return Duration.ofSeconds(30);
    }

    private LockInspector inspector(String query) {
        BackendUri parsed = BackendUri.parse(URI.create(uri(query)), LockOptions.defaults(), Set.of());
        LockBackend backend = track(new ZooKeeperBackendProvider().open(parsed));
        return backend.inspector().orElseThrow();
    }

    @Test
    void inspect_holderAndWaiter_showTheirHostAndPid() throws Exception {
        LockInspector inspector = inspector();
        Lease held = client().lock("who").acquire();
        CompletableFuture<Lease> waiter = newClient().lock("who").acquireAsync(scaled(30));
        LockSnapshot s = await().atMost(scaled(10))
                .until(() -> inspector.inspect("who").get(0), l -> l.waiters().size() == 1);
        String host = InetAddress.getLocalHost().getHostName();
        long pid = ProcessHandle.current().pid();
        assertThat(s.holders()).extracting(EntrySnapshot::host).containsExactly(host);
        assertThat(s.holders()).extracting(EntrySnapshot::pid).containsExactly(pid);
        assertThat(s.waiters()).extracting(EntrySnapshot::host).containsExactly(host);
        assertThat(s.waiters()).extracting(EntrySnapshot::pid).containsExactly(pid);
        held.close();
        waiter.get().close();
    }

    @Test
    void inspect_deadHolder_showsTheChildsPid() throws Exception {
        LockInspector inspector = inspector();
        ChildJvm child = track(ChildJvm.start(LockWorker.class, List.of("hold", uri(longHold()), "gone")));
        child.awaitLine("HOLDING", scaled(30));
        long childPid = child.pid();
        child.kill();
        EntrySnapshot holder = inspector.inspect("gone").get(0).holders().get(0);
        assertThat(holder.pid()).isEqualTo(childPid);
        assertThat(holder.host()).isEqualTo(InetAddress.getLocalHost().getHostName());
        assertThat(inspector.forceRelease("gone", List.of(holder.key()))).containsExactly(holder.key());
        assertThat(inspector.inspect("gone")).allMatch(l -> l.holders().isEmpty());
    }

    @Test
    void forceRelease_liveHolderWithRenewalOff_isToldByTheWatchOnItsNode() throws Exception {
        LockInspector inspector = inspector("renewal=false");
        assertThat(inspector.holderNoticesForcedRelease()).isTrue();
        assertThat(inspector.forcedReleaseNotice()).isEqualTo(LockInspector.ForcedReleaseNotice.AT_ONCE);
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease stuck =
                client("renewal=false&leaseTime=3s").lock("quiet").acquire().onLost(lost::add);
        CompletableFuture<Lease> waiter = newClient().lock("quiet").acquireAsync(scaled(60));
        LockSnapshot s = await().atMost(scaled(10))
                .until(() -> inspector.inspect("quiet").get(0), l -> l.waiters().size() == 1);

        assertThat(inspector.forceRelease("quiet", List.of(s.holders().get(0).key())))
                .hasSize(1);
        await().atMost(Duration.ofSeconds(1)).until(() -> lost.size() == 1);
        assertThat(stuck.isValid()).isFalse();
        assertThat(lost.get(0)).hasMessageContaining("released by force");
        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(stuck.fencingToken());
        stuck.close();
        next.close();
    }

    private static Duration scaled(long seconds) {
        return io.dlock.testkit.Timing.scale(Duration.ofSeconds(seconds));
    }
}
