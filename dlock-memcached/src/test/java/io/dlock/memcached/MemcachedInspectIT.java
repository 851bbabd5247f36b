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
import io.dlock.spi.LockKind;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockSnapshot;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.FaultProxy;
import io.dlock.testkit.InspectorContract;
import io.dlock.testkit.LockWorker;
import java.net.InetAddress;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
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

    /**
     * The contract's test, but without its FIFO assumption, which memcached does not meet (no FAIR
     * capability: waiters poll, and the next grant goes to whichever polls first). The contract
     * closes the holder, then waits for the first waiter while the second, when it won the race,
     * holds the lock until the test closes it: a 30 s timeout about every other run (20 runs:
     * {@code MemcachedInspectLoopIT}, 12 timed out). Here the view must follow whichever waiter was
     * granted, and show the other one still waiting; {@link
     * #inspect_laterWaiterPollsFirst_showsItAsHolderAndTheEarlierAsWaiter} makes the later waiter win.
     */
    @Test
    @Override
    public void inspect_exclusiveWithTwoWaiters_showsHolderTokenAndQueueInOrder() throws Exception {
        LockInspector inspector = inspector();
        assertThat(inspector.inspect("")).isEmpty();
        Lease held = newClient().lock("orders").acquire();
        CompletableFuture<Lease> second = newClient().lock("orders").acquireAsync(scaled(30));
        awaitWaiters(inspector, "orders", 1);
        CompletableFuture<Lease> third = newClient().lock("orders").acquireAsync(scaled(30));
        LockSnapshot s = awaitRecorded(inspector, "orders", 2);

        assertThat(s.kind()).isEqualTo(LockKind.EXCLUSIVE);
        EntrySnapshot holder = s.holders().get(0);
        assertThat(holder.mode()).isEqualTo(LockMode.EXCLUSIVE);
        assertThat(holder.leaseToken()).isEqualTo(held.fencingToken());
        assertThat(holder.leaseLeft()).isNotNull().isPositive();
        List<String> waiting = s.waiters().stream().map(EntrySnapshot::clientId).toList();
        assertThat(waiting).doesNotContain(holder.clientId()).doesNotHaveDuplicates();

        held.close();
        Lease next = await().atMost(scaled(10))
                .until(() -> second.isDone() ? second.get() : third.isDone() ? third.get() : null, l -> l != null);
        CompletableFuture<Lease> other = next == second.getNow(null) ? third : second;
        LockSnapshot after = awaitRecorded(inspector, "orders", 1);
        assertThat(after.holders().get(0).leaseToken())
                .isEqualTo(next.fencingToken())
                .isGreaterThan(held.fencingToken());
        assertThat(waiting).contains(after.holders().get(0).clientId());
        assertThat(after.waiters())
                .extracting(EntrySnapshot::clientId)
                .hasSize(1)
                .isSubsetOf(waiting)
                .doesNotContain(after.holders().get(0).clientId());
        assertThat(other).isNotDone();
        next.close();
        other.get().close();
        await().atMost(scaled(10)).until(() -> inspector.inspect(""), List::isEmpty);
    }

    @Test
    void inspect_laterWaiterPollsFirst_showsItAsHolderAndTheEarlierAsWaiter() throws Exception {
        LockInspector inspector = inspector();
        FaultProxy slow = track(FaultProxy.start(server.port()));
        Lease held = client().lock("orders").acquire();
        LockClient early = track(LockClient.connect(uri("").replace(server.connectString(), slow.connectString())));
        CompletableFuture<Lease> second = early.lock("orders").acquireAsync(scaled(60));
        awaitWaiters(inspector, "orders", 1);
        CompletableFuture<Lease> third = client().lock("orders").acquireAsync(scaled(60));
        awaitWaiters(inspector, "orders", 2);
        // The earlier waiter's polls now take a second each way: the later one polls first.
        slow.latency(FaultProxy.Direction.BOTH, Duration.ofSeconds(1));

        held.close();
        Lease next = third.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        LockSnapshot s = awaitRecorded(inspector, "orders", 1);

        assertThat(second).isNotDone();
        assertThat(s.holders()).extracting(EntrySnapshot::leaseToken).containsExactly(next.fencingToken());
        assertThat(s.waiters().get(0).clientId())
                .isNotEqualTo(s.holders().get(0).clientId());
        slow.pass();
        next.close();
        second.get(scaled(30).toMillis(), TimeUnit.MILLISECONDS).close();
    }

    /** Waits until {@code closeFirst}'s and {@code other}'s grants came, closing each when it comes. */
    private static void closeBoth(CompletableFuture<Lease> a, CompletableFuture<Lease> b) throws Exception {
        Lease first = await().atMost(scaled(30))
                .until(() -> a.isDone() ? a.get() : b.isDone() ? b.get() : null, l -> l != null);
        first.close();
        (first == a.getNow(null) ? b : a).get().close();
    }

    /** A snapshot with {@code waiters} waiters whose holder's token is recorded (RECORD_DELAY_NANOS). */
    private static LockSnapshot awaitRecorded(LockInspector inspector, String name, int waiters) {
        return await().atMost(scaled(10))
                .until(
                        () -> only(inspector.inspect(name)),
                        s -> s.waiters().size() == waiters
                                && s.holders().size() == 1
                                && s.holders().get(0).leaseToken() != 0);
    }

    /**
     * The contract's test, except that the holder dies once its grant record is written: a holder
     * killed within {@link MemcachedLockProtocol#RECORD_DELAY_NANOS} of its grant has none, and shows
     * token 0 (its forced release works the same: the key is what it removes).
     */
    @Test
    @Override
    public void forceRelease_deadHolder_grantsTheWaiterLongBeforeItsLeaseEnds() throws Exception {
        LockInspector inspector = inspector();
        ChildJvm child = track(ChildJvm.start(LockWorker.class, List.of("hold", uri(longHold()), "dead")));
        long deadToken = Long.parseLong(child.awaitLine("HOLDING", scaled(30)).split(" ")[1]);
        await().atMost(scaled(10))
                .until(() -> server.command("mg " + prefix + ":g:dead v").startsWith("VA"));
        child.kill();
        CompletableFuture<Lease> waiter = newClient().lock("dead").acquireAsync(scaled(60));
        LockSnapshot s = awaitWaiters(inspector, "dead", 1);
        assertThat(s.holders()).extracting(EntrySnapshot::leaseToken).containsExactly(deadToken);

        assertThat(inspector.forceRelease("dead", List.of(s.holders().get(0).key())))
                .hasSize(1);

        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(deadToken);
        next.close();
    }

    /** Uncontended cycles shorter than the record delay write no grant record: the add is their only store. */
    @Test
    void uncontendedCycles_writeNoGrantRecord() throws Exception {
        LockClient c = client();
        c.lock("w1").acquire().close(); // the connection's first use, outside the count
        long setsBefore = stat("cmd_set");
        int cycles = 200;
        int slow = 0;
        for (int i = 0; i < cycles; i++) {
            long t0 = System.nanoTime();
            c.lock("w1").acquire().close();
            if (System.nanoTime() - t0 >= MemcachedLockProtocol.RECORD_DELAY_NANOS) {
                slow++; // a cycle held that long (a GC pause) may write its record
            }
        }
        long records = stat("cmd_set") - setsBefore - cycles;
        assertThat(records)
                .as("grant records written by %s cycles (%s slow)", cycles, slow)
                .isBetween(0L, (long) slow);
        if (slow == 0) {
            assertThat(server.command("mg " + prefix + ":g:w1 v")).isEqualTo("EN");
        }
    }

    /** A held lock gets its record once, a moment after its grant; inspect shows its token from then on. */
    @Test
    void inspect_heldPastTheRecordDelay_showsTokenFromTheRecordBeforeAnyRenewal() throws Exception {
        LockInspector inspector = inspector();
        Lease held = client("leaseTime=60s").lock("rec").acquire();
        await().atMost(scaled(10))
                .until(() -> server.command("mg " + prefix + ":g:rec v").startsWith("VA"));
        EntrySnapshot holder = only(inspector.inspect("rec")).holders().get(0);
        assertThat(holder.leaseToken()).isEqualTo(held.fencingToken());
        assertThat(holder.since()).isBetween(Instant.now().minusSeconds(60), Instant.now());
        assertThat(server.command("mg " + prefix + ":l:rec v").split("\n")[1].split(" "))
                .as("no renewal yet: the lock key holds the owner only")
                .hasSize(2);
        held.close();
    }

    private static long stat(String name) {
        for (String line : server.command("stats").split("\n")) {
            String[] f = line.trim().split(" ");
            if (f.length == 3 && f[0].equals("STAT") && f[1].equals(name)) {
                return Long.parseLong(f[2]);
            }
        }
        throw new IllegalStateException("no stat " + name);
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
        // No FIFO on memcached: either waiter may be granted first, and holds until closed.
        closeBoth(second, third);
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
        await().atMost(scaled(10))
                .until(() -> server.command("mg " + prefix + ":g:dead v").startsWith("VA"));
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
