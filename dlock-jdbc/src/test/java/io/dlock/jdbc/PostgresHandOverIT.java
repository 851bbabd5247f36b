package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.LockWorker;
import io.dlock.testkit.Timing;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The hand-over on PostgreSQL (see {@link JdbcLockProtocol}): a release makes the first live waiter
 * the owner in the same statement. Each race the argument there names, against the real database.
 */
class PostgresHandOverIT extends PostgresTestSupport {

    /**
     * A forced release ({@code dlock release --force}, here an inspector whose own lease time is the
     * default 30 s) hands the lock to the first waiter, W, whose lease is 3 s; W's process is then
     * killed. W must have been given its own 3 s, not the inspector's 30 s: a third client gets the
     * lock within W's lease plus the poll.
     */
    @Test
    void forcedRelease_toAWaiterWithAShortLeaseThatDies_freesTheLockWithinTheWaitersLease() throws Exception {
        Lease held = client("leaseTime=60s").lock("forced").acquire();
        try (ChildJvm w = ChildJvm.start(LockWorker.class, List.of("hold", uri("leaseTime=3s"), "forced"))) {
            w.awaitLine("READY", scaled(30));
            await().atMost(scaled(30)).until(() -> entries("forced").size() == 2);
            io.dlock.spi.LockInspector inspector = inspector();
            String key = inspector.inspect("forced").get(0).holders().get(0).key();
            assertThat(inspector.forceRelease("forced", List.of(key))).containsExactly(key);
            long token = Long.parseLong(w.awaitLine("HOLDING", scaled(10)).split(" ")[1]);
            long killedAt = System.nanoTime();
            w.kill();
            var next = client("leaseTime=3s").lock("forced").tryAcquire(scaled(20));
            long passedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
            assertThat(next)
                    .as("the lock 20 s after the killed holder's 3 s lease began")
                    .isPresent();
            assertThat(next.get().fencingToken()).isGreaterThan(token);
            assertThat(passedMs)
                    .isLessThan(Timing.scale(Duration.ofMillis(3_000 + 2_000)).toMillis());
            next.get().close();
        }
        held.close(); // taken from it: changes nothing
        try (Connection c = connect();
                java.sql.Statement s = c.createStatement()) {
            s.executeUpdate("DELETE FROM " + table + "_waiters WHERE name = 'forced' AND token > 0");
        }
    }

    @Test
    void release_handsTheRowToTheFirstWaiter_nextTokenAndNoGrantOfItsOwn() throws Exception {
        LockClient a = client();
        LockClient b = client();
        Lease held = a.lock("h").acquire();
        var pending = b.lock("h").acquireAsync(Duration.ofMinutes(1));
        await().atMost(scaled(10)).until(() -> entries("h").size() == 2);
        String waiter = entries("h").get(1);
        long before = rowToken("h");
        held.close();
        Lease next = pending.get(10, TimeUnit.SECONDS);
        assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
        assertThat(entries("h")).containsExactly(waiter); // the owner is the waiter's acquisition
        assertThat(rowToken("h")).isEqualTo(before + 1); // one grant: the hand-over's
        next.close();
        assertThat(rowToken("h")).isEqualTo(before + 1);
    }

    @Test
    void waiterTimingOutWhileTheRowIsHandedOver_neverLeftOwningIt() throws Exception {
        checkWithdrawalRacingHandOver();
    }

    @Test
    void handOverWhoseNotifyIsLost_waiterLearnsItFromItsPoll() throws Exception {
        LockClient a = client("leaseTime=3s");
        LockClient b = client("leaseTime=3s");
        Lease held = a.lock("lost").acquire();
        var pending = b.lock("lost").acquireAsync(Duration.ofMinutes(1));
        await().atMost(scaled(10)).until(() -> entries("lost").size() == 2);
        String owner = entries("lost").get(0);
        String waiter = entries("lost").get(1);
        long before = rowToken("lost");
        // The release statement itself, with its NOTIFY sent to a channel nobody listens on.
        String lostNotify = new JdbcStatements(JdbcDialect.POSTGRESQL, table)
                .handOver.replace("'dlock_' || u.client", "'nobody_' || u.client");
        try (Connection c = connect();
                PreparedStatement ps = c.prepareStatement(lostNotify)) {
            ps.setString(1, "lost");
            ps.setString(2, owner);
            ps.setLong(3, 3_000);
            ps.setString(4, "lost");
            ps.setString(5, owner);
            ps.setString(6, owner);
            ps.executeQuery().close();
        }
        assertThat(entries("lost")).containsExactly(waiter);
        // The waiter's poll runs at least every third of its 3 s waiter lease.
        Lease next = pending.get(Timing.scale(Duration.ofSeconds(5)).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
        assertThat(next.isValid()).isTrue();
        assertThat(rowToken("lost")).isEqualTo(before + 1);
        next.close();
        held.close(); // its row was taken behind its back: the release changes nothing
        assertThat(rowToken("lost")).isEqualTo(before + 1);
    }

    @Test
    void handOverToAWaiterWhoseClientDied_nextWaiterGetsItAfterThatLease() throws Exception {
        LockClient a = client("leaseTime=30s");
        LockClient c = client("leaseTime=2s");
        Lease held = a.lock("dead").acquire();
        long handedToken;
        String dead;
        try (ChildJvm child = ChildJvm.start(LockWorker.class, List.of("hold", uri("leaseTime=3s"), "dead"))) {
            child.awaitLine("READY", Timing.scale(Duration.ofSeconds(30)));
            await().atMost(scaled(20)).until(() -> entries("dead").size() == 2);
            dead = entries("dead").get(1);
            var pending = c.lock("dead").acquireAsync(Duration.ofMinutes(1));
            await().atMost(scaled(10)).until(() -> entries("dead").size() == 3);
            child.kill();
            // Its waiter row lives on for 2 to 3 s (its 3 s waiter lease, refreshed every second): the
            // release hands the row to it.
            long before = rowToken("dead");
            held.close();
            assertThat(entries("dead").get(0)).isEqualTo(dead);
            handedToken = rowToken("dead");
            assertThat(handedToken).isEqualTo(before + 1);
            // Nobody learns of that grant; it ends with the dead waiter's own 3 s lease (not the
            // releaser's 30 s), and the next waiter takes it.
            Lease next = pending.get(Timing.scale(Duration.ofSeconds(6)).toMillis(), TimeUnit.MILLISECONDS);
            assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
            assertThat(rowToken("dead")).isEqualTo(handedToken + 1);
            next.close();
        }
        // The dead client's handed-over row is no waiter (token > 0); it is purged once expired.
        assertThat(entries("dead")).isEmpty();
        deleteRowOf(dead);
    }

    /**
     * A grant attempt of the waiter is in flight (a wake-up sent it) when the release hands it the
     * row; the handed lease is used and released before that attempt reaches the database, which
     * then finds the row free. That late grant belongs to an acquisition that has ended: the client
     * must give it back at once, not leave the lock to run out its lease (the CI failure of a
     * multi-lock round that waited 30 s for a row nobody held).
     */
    @Test
    void grantAttemptInFlightWhileHandedOver_itsLateGrantIsGivenBack() throws Exception {
        String grantSql = new JdbcStatements(JdbcDialect.POSTGRESQL, table).grant;
        StatementGate gate = new StatementGate(grantSql);
        LockClient a = client();
        LockClient b = clientThrough(gate);
        Lease held = a.lock("late").acquire();
        var pending = b.lock("late").acquireAsync(Duration.ofMinutes(1));
        await().atMost(scaled(10)).until(() -> entries("late").size() == 2);
        String waiter = entries("late").get(1);
        gate.close();
        try (Connection c = connect();
                PreparedStatement ps = c.prepareStatement("SELECT pg_notify('dlock_' || client, acquisition) FROM "
                        + table + "_waiters WHERE acquisition = ?")) {
            ps.setString(1, waiter); // wakes the waiter: its client sends a grant attempt, held at the gate
            ps.executeQuery().close();
        }
        assertThat(gate.awaitHeld(scaled(10)))
                .as("the wake-up's grant attempt reached the gate")
                .isTrue();
        long before = rowToken("late");
        held.close(); // hands the row to the waiter, whose client learns it by the NOTIFY
        Lease handed = pending.get(10, TimeUnit.SECONDS);
        assertThat(handed.fencingToken()).isGreaterThan(held.fencingToken());
        assertThat(rowToken("late")).isEqualTo(before + 1);
        handed.close();
        assertThat(entries("late")).isEmpty();
        gate.open(); // the attempt now finds the row free and takes it for the ended acquisition
        await().atMost(scaled(5)).until(() -> rowToken("late") == before + 2);
        await().atMost(scaled(5))
                .untilAsserted(() -> assertThat(entries("late")).isEmpty());
        try (Lease again = a.lock("late").tryAcquire(Duration.ZERO).orElseThrow()) {
            assertThat(again.fencingToken()).isGreaterThan(handed.fencingToken());
            assertThat(rowToken("late")).isEqualTo(before + 3);
        }
    }

    private long rowToken(String lock) throws SQLException {
        return queryLong("SELECT token FROM " + table + " WHERE name = '" + lock + "'");
    }

    private void deleteRowOf(String acquisition) throws SQLException {
        try (Connection c = connect();
                PreparedStatement ps = c.prepareStatement(
                        "DELETE FROM " + table + "_waiters WHERE acquisition = ?" + " AND token > 0")) {
            ps.setString(1, acquisition);
            assertThat(ps.executeUpdate()).isEqualTo(1);
        }
    }
}
