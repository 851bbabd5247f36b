package io.dlock.memcached;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockKind;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockSnapshot;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.LockWorker;
import java.net.InetAddress;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The operator view on a real memcached: inspect (through the LRU crawler's dump), forced release
 * with a CAS on the inspected grant, watch by polling; host and pid from each client's info key.
 */
class MemcachedInspectIT extends MemcachedTestSupport {

    private LockInspector inspector() {
        BackendUri parsed = BackendUri.parse(URI.create(uri("")), LockOptions.defaults(), MemcachedUri.PARAMETERS);
        LockBackend backend = track(new MemcachedBackendProvider().open(parsed));
        return backend.inspector().orElseThrow();
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
    void inspect_holderAndTwoWaiters_showsClientHostPidTokenAfterRenewalAndWaitersInArrivalOrder() throws Exception {
        LockInspector inspector = inspector();
        assertThat(inspector.inspect("")).isEmpty();
        Lease held = client("leaseTime=3s").lock("orders").acquire();
        LockClient b = client("leaseTime=3s");
        LockClient c = client("leaseTime=3s");
        CompletableFuture<Lease> second = b.lock("orders").acquireAsync(scaled(30));
        awaitWaiters(inspector, "orders", 1);
        CompletableFuture<Lease> third = c.lock("orders").acquireAsync(scaled(30));
        awaitWaiters(inspector, "orders", 2);
        // The token and the grant time are written by the holder's first renewal (a third of the lease).
        LockSnapshot s = await().atMost(scaled(10))
                .until(
                        () -> only(inspector.inspect("orders")),
                        l -> l.waiters().size() == 2
                                && !l.holders().isEmpty()
                                && l.holders().get(0).backendToken() != 0);

        assertThat(s.name()).isEqualTo("orders");
        assertThat(s.kind()).isEqualTo(LockKind.EXCLUSIVE);
        assertThat(s.maxPermits()).isEqualTo(1);
        EntrySnapshot holder = s.holders().get(0);
        assertThat(holder.leaseToken()).isEqualTo(held.fencingToken());
        assertThat(holder.mode()).isEqualTo(LockMode.EXCLUSIVE);
        assertThat(holder.host()).isEqualTo(localHost());
        assertThat(holder.pid()).isEqualTo(ProcessHandle.current().pid());
        assertThat(holder.connected()).as("memcached cannot tell").isNull();
        assertThat(holder.leaseLeft()).isNotNull().isLessThanOrEqualTo(Duration.ofSeconds(4));
        assertThat(holder.since()).isBetween(Instant.now().minusSeconds(60), Instant.now());
        assertThat(s.waiters()).extracting(EntrySnapshot::backendToken).containsExactly(0L, 0L);
        assertThat(s.waiters())
                .extracting(EntrySnapshot::pid)
                .containsOnly(ProcessHandle.current().pid());
        assertThat(s.waiters()).extracting(EntrySnapshot::host).containsOnly(localHost());
        assertThat(s.waiters().get(0).since())
                .isBeforeOrEqualTo(s.waiters().get(1).since());
        String secondClient = s.waiters().get(0).clientId();
        String thirdClient = s.waiters().get(1).clientId();
        assertThat(List.of(holder.clientId(), secondClient, thirdClient)).doesNotHaveDuplicates();

        held.close();
        Lease b1 = second.get();
        LockSnapshot next = awaitWaiters(inspector, "orders", 1);
        assertThat(next.holders()).extracting(EntrySnapshot::clientId).containsExactly(secondClient);
        assertThat(next.waiters()).extracting(EntrySnapshot::clientId).containsExactly(thirdClient);
        b1.close();
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
    void forceRelease_liveHolder_firesOnLostAndGrantsTheWaiterAHigherToken() throws Exception {
        LockInspector inspector = inspector();
        assertThat(inspector.holderNoticesForcedRelease()).isTrue();
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease stuck = client("leaseTime=3s").lock("stuck").acquire().onLost(lost::add);
        CompletableFuture<Lease> waiter = client("leaseTime=3s").lock("stuck").acquireAsync(scaled(60));
        LockSnapshot s = awaitWaiters(inspector, "stuck", 1);
        String key = s.holders().get(0).key();

        List<String> removed = inspector.forceRelease("stuck", List.of(key));

        assertThat(removed).containsExactly(key);
        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(stuck.fencingToken());
        await().atMost(scaled(10)).until(() -> lost.size() == 1);
        assertThat(stuck.isValid()).isFalse();
        assertThat(inspector.forceRelease("stuck", removed))
                .as("a removed key removes nothing, not even the later grant")
                .isEmpty();
        assertThat(only(inspector.inspect("stuck")).holders())
                .extracting(EntrySnapshot::key)
                .hasSize(1)
                .doesNotContain(key);
        stuck.close();
        next.close();
    }

    @Test
    void forceRelease_deadHolder_showsItsPidAndTheWaiterIsGrantedBeforeTheLeaseEnds() throws Exception {
        LockInspector inspector = inspector();
        ChildJvm child = track(ChildJvm.start(LockWorker.class, List.of("hold", uri("leaseTime=60s"), "dead")));
        long deadToken = Long.parseLong(child.awaitLine("HOLDING", scaled(30)).split(" ")[1]);
        long childPid = child.pid();
        child.kill();
        LockSnapshot s = only(inspector.inspect("dead"));
        EntrySnapshot holder = s.holders().get(0);
        assertThat(holder.pid()).isEqualTo(childPid);
        assertThat(holder.host()).isEqualTo(localHost());
        assertThat(holder.leaseLeft()).isGreaterThan(Duration.ofSeconds(30));
        CompletableFuture<Lease> waiter = client("leaseTime=5s").lock("dead").acquireAsync(scaled(60));
        awaitWaiters(inspector, "dead", 1);

        assertThat(inspector.forceRelease("dead", List.of(holder.key()))).containsExactly(holder.key());

        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(deadToken);
        next.close();
        // A killed client cannot delete its info key; it would live out its TTL.
        assertThat(server.command("md " + MemcachedBackend.infoKey(holder.clientId())))
                .isEqualTo("HD");
    }

    @Test
    void forceRelease_badInput_throwsAndChangesNothing() throws Exception {
        LockInspector inspector = inspector();
        Lease held = client().lock("kept").acquire();
        String key = only(inspector.inspect("kept")).holders().get(0).key();

        assertThatThrownBy(() -> inspector.forceRelease("", List.of(key)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("name");
        assertThatThrownBy(() -> inspector.forceRelease("other", List.of(key)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no entry of lock 'other'");
        assertThatThrownBy(() -> inspector.forceRelease("kept", List.of(prefix + ":l:kept#")))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> inspector.watch("kept", Duration.ZERO, l -> {}, e -> {}))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> inspector.watch("", Duration.ofSeconds(1), l -> {}, e -> {}))
                .isInstanceOf(IllegalArgumentException.class);

        assertThat(only(inspector.inspect("kept")).holders())
                .extracting(EntrySnapshot::key)
                .containsExactly(key);
        assertThat(held.isValid()).isTrue();
        held.close();
    }

    @Test
    void watch_scriptedSequence_reportsEachStateInOrder() throws Exception {
        LockInspector inspector = inspector();
        List<String> states = Collections.synchronizedList(new ArrayList<>());
        List<Throwable> errors = new CopyOnWriteArrayList<>();
        LockClient a = client();
        LockClient b = client();
        try (LockInspector.Watch watch =
                inspector.watch("seq", Duration.ofMillis(20), l -> states.add(describe(l)), errors::add)) {
            await().atMost(scaled(10)).until(() -> states.contains(""));
            Lease first = a.lock("seq").acquire();
            await().atMost(scaled(10)).until(() -> states.contains("H"));
            CompletableFuture<Lease> second = b.lock("seq").acquireAsync(scaled(30));
            await().atMost(scaled(10)).until(() -> states.contains("H W"));
            first.close();
            Lease granted = second.get();
            await().atMost(scaled(10))
                    .until(() ->
                            states.size() > 3 && states.get(states.size() - 1).equals("H"));
            granted.close();
            await().atMost(scaled(10))
                    .until(() ->
                            states.size() > 1 && states.get(states.size() - 1).isEmpty());
        }
        // A release and the next grant are two steps: a read between them may see the waiter alone,
        // and the granted waiter's key goes just after its grant: a read may see both.
        List<String> seen = new ArrayList<>(states);
        seen.removeIf(x -> x.equals(" W"));
        for (int i = seen.size() - 1; i > 0; i--) {
            if (seen.get(i).equals(seen.get(i - 1))) {
                seen.remove(i);
            }
        }
        assertThat(seen).containsExactly("", "H", "H W", "H", "");
        assertThat(errors).isEmpty();
    }

    private static String describe(List<LockSnapshot> locks) {
        StringBuilder b = new StringBuilder();
        for (LockSnapshot l : locks) {
            l.holders().forEach(e -> b.append("H"));
            l.waiters().forEach(e -> b.append(" W"));
        }
        return b.toString();
    }
}
