package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockSnapshot;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.InspectorContract;
import io.dlock.testkit.LockWorker;
import java.net.InetAddress;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The operator view of PostgreSQL's session mode ({@code mode=session}, {@link PgSessionInspector}):
 * the testkit's inspector contract on advisory locks read from {@code pg_locks}, a forced release
 * by {@code pg_terminate_backend} of the holder's pinned backend, and the two ways a holder dies
 * here: a hung process whose connection lives on (a forced release frees it) and a killed one
 * (the server frees it at once).
 */
class PostgresSessionInspectIT extends PostgresTestSupport implements InspectorContract {

    @Override
    public String uri(String query) {
        return super.uri(query.isEmpty() ? "mode=session" : "mode=session&" + query);
    }

    /** Advisory locks live as long as the session: no lease time is left to show. */
    @Override
    public boolean reportsLeaseLeft() {
        return false;
    }

    private static LockSnapshot awaitWaiters(LockInspector inspector, String name, int waiters) {
        return await().atMost(scaled(10))
                .until(
                        () -> inspector.inspect(name),
                        l -> l.size() == 1
                                && l.get(0).holders().size() == 1
                                && l.get(0).waiters().size() == waiters)
                .get(0);
    }

    /** Session mode has exclusive locks only: the client refuses the others, and nothing is shown. */
    @Test
    @Override
    public void inspect_readWriteAndSemaphore_showKindModesPermitsAndQueue() throws Exception {
        LockInspector inspector = inspector();
        LockClient c = newClient();
        assertThatThrownBy(() -> c.readWriteLock("catalog"))
                .isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("READ_WRITE");
        assertThatThrownBy(() -> c.semaphore("pool", 3))
                .isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("SEMAPHORE");
        assertThat(inspector.inspect("")).isEmpty();
    }

    /**
     * A holder whose process hangs (SIGSTOP) keeps its connection, and so its advisory lock, for
     * good: the forced release ends its backend, and the waiter is granted with a higher token.
     */
    @Test
    @Override
    public void forceRelease_deadHolder_grantsTheWaiterLongBeforeItsLeaseEnds() throws Exception {
        LockInspector inspector = inspector();
        ChildJvm child = track(ChildJvm.start(LockWorker.class, List.of("hold", uri(longHold()), "dead")));
        long deadToken = Long.parseLong(child.awaitLine("HOLDING", scaled(30)).split(" ")[1]);
        child.pause();
        CompletableFuture<Lease> waiter = newClient().lock("dead").acquireAsync(scaled(60));
        LockSnapshot s = awaitWaiters(inspector, "dead", 1);
        EntrySnapshot holder = s.holders().get(0);
        assertThat(holder.leaseToken()).isEqualTo(deadToken);
        assertThat(holder.pid()).isEqualTo(child.pid());

        assertThat(inspector.forceRelease("dead", List.of(holder.key()))).containsExactly(holder.key());

        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(deadToken);
        assertThat(inspector.inspect("dead").get(0).holders())
                .extracting(EntrySnapshot::leaseToken)
                .containsExactly(next.fencingToken());
        next.close();
        child.kill();
    }

    /**
     * A killed holder's session ends and the server frees its advisory lock at once; the waiter is
     * granted once the dead holder's window (3 s / 2 + 250 ms) has passed, since the dead holder's
     * lease could have been valid until then.
     */
    @Test
    void killedHolder_waiterGrantedAfterTheDeadHoldersWindow_itsKeyRemovesNothing() throws Exception {
        LockInspector inspector = inspector();
        ChildJvm child = track(ChildJvm.start(LockWorker.class, List.of("hold", uri("leaseTime=3s"), "killed")));
        long deadToken = Long.parseLong(child.awaitLine("HOLDING", scaled(30)).split(" ")[1]);
        EntrySnapshot dead = inspector.inspect("killed").get(0).holders().get(0);
        CompletableFuture<Lease> waiter = newClient().lock("killed").acquireAsync(scaled(60));
        awaitWaiters(inspector, "killed", 1);

        child.kill();

        // No forced release: the session died, and the lock with it; the fence waits out the window.
        long killedAt = System.nanoTime();
        Lease next = waiter.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        long afterMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
        assertThat(afterMs).isBetween(1_700L, scaled(4).toMillis());
        assertThat(next.fencingToken()).isGreaterThan(deadToken);
        assertThat(inspector.forceRelease("killed", List.of(dead.key()))).isEmpty();
        assertThat(next.isValid()).isTrue();
        EntrySnapshot now = inspector.inspect("killed").get(0).holders().get(0);
        assertThat(now.leaseToken()).isEqualTo(next.fencingToken());
        next.close();
    }

    @Test
    void inspect_holderAndWaiters_showWhatDlockAndPostgresRecord() throws Exception {
        LockInspector inspector = inspector();
        long pid = ProcessHandle.current().pid();
        String host = InetAddress.getLocalHost().getHostName();
        Instant before = Instant.now().minusSeconds(5); // the database's clock: a margin
        LockClient holderClient = newClient();
        Lease held = holderClient.lock("who").acquire();
        CompletableFuture<Lease> second = newClient().lock("who").acquireAsync(scaled(30));
        awaitWaiters(inspector, "who", 1);
        CompletableFuture<Lease> third = newClient().lock("who").acquireAsync(scaled(30));
        LockSnapshot s = awaitWaiters(inspector, "who", 2);

        EntrySnapshot h = s.holders().get(0);
        assertThat(h.pid()).isEqualTo(pid);
        assertThat(h.host()).isEqualTo(host);
        assertThat(h.connected()).isTrue();
        assertThat(h.leaseLeft()).isNull();
        assertThat(h.since()).isBetween(before, Instant.now().plusSeconds(5));
        assertThat(h.clientId()).matches("[0-9a-f]{32}");
        assertThat(h.leaseToken()).isEqualTo(held.fencingToken());
        assertThat(h.key()).isEqualTo("who#" + backendPid("who", true) + "#" + (held.fencingToken() >> 10));
        for (EntrySnapshot w : s.waiters()) {
            assertThat(w.pid()).as("JVM pid of %s", w.key()).isEqualTo(pid);
            assertThat(w.host()).as("address of %s", w.key()).isEqualTo("127.0.0.1");
            assertThat(w.backendToken()).isZero();
            assertThat(w.since())
                    .as("wait start of %s", w.key())
                    .isBetween(before, Instant.now().plusSeconds(5));
            assertThat(w.clientId()).matches("[0-9a-f]{32}").isNotEqualTo(h.clientId());
        }
        assertThat(s.waiters().get(0).since())
                .isBeforeOrEqualTo(s.waiters().get(1).since());
        assertThat(inspector.forceRelease("who", List.of(s.waiters().get(0).key())))
                .as("a waiter has no grant to remove")
                .isEmpty();
        assertThatThrownBy(() -> inspector.forceRelease("who", List.of("who#x#3")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no entry of lock 'who'");
        assertThat(held.isValid()).isTrue();

        held.close();
        second.get().close();
        third.get().close();
        await().atMost(scaled(10)).until(() -> inspector.inspect("").isEmpty());
    }

    @Test
    void forceRelease_keyOfAnEarlierGrantOnTheSameConnection_removesNothing() throws Exception {
        LockInspector inspector = inspector();
        LockClient client = newClient();
        Lease first = client.lock("again").acquire();
        String key = inspector.inspect("again").get(0).holders().get(0).key();
        first.close();
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease second = client.lock("again").acquire().onLost(lost::add); // the kept connection again
        String now = inspector.inspect("again").get(0).holders().get(0).key();
        assertThat(now.substring(0, now.lastIndexOf('#')))
                .as("the same backend holds it")
                .isEqualTo(key.substring(0, key.lastIndexOf('#')));

        assertThat(inspector.forceRelease("again", List.of(key))).isEmpty();

        assertThat(second.isValid()).isTrue();
        assertThat(inspector.inspect("again").get(0).holders())
                .extracting(EntrySnapshot::key)
                .containsExactly(now);
        second.close();
        assertThat(lost).isEmpty();
    }

    @Test
    void inspect_advisoryLocksOfOthers_areNotShown() throws Exception {
        LockInspector inspector = inspector();
        Lease held = newClient().lock("mine").acquire();
        try (Connection c = connect();
                PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_lock(42)")) {
            ps.executeQuery().close();
            assertThat(inspector.inspect("")).extracting(LockSnapshot::name).containsExactly("mine");
        }
        held.close();
    }

    /** The backend pid that holds ({@code granted}) or waits for lock {@code lock}'s advisory lock. */
    private long backendPid(String lock, boolean granted) throws SQLException {
        long key = PgSessionProtocol.key(table, lock);
        try (Connection c = connect();
                PreparedStatement ps = c.prepareStatement("SELECT pid FROM pg_locks WHERE locktype = 'advisory'"
                        + " AND classid = ? AND objid = ? AND objsubid = 1 AND granted = ?")) {
            ps.setLong(1, key >>> 32);
            ps.setLong(2, key & 0xffffffffL);
            ps.setBoolean(3, granted);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                return rs.getLong(1);
            }
        }
    }
}
