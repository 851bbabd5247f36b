package io.dlock.jdbc;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.dlock.LockBackendException;
import io.dlock.Ticker;
import io.dlock.spi.EntryLostException;
import io.dlock.spi.Grant;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockProtocol;
import io.dlock.spi.LockRequest;
import io.dlock.spi.Position;
import io.dlock.spi.QueueEntry;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * dlock's exclusive lock on a lease table (see {@link JdbcStatements} for why each step is one
 * statement).
 *
 * <p>An acquisition first tries the grant. If the lock is taken it reports waiting; its first
 * {@code awaitTurn} inserts a waiter row (arrival order = its {@code seq}) and tries once more,
 * since the holder may have left between the two statements (so a caller that gives up at once,
 * {@code tryAcquire(ZERO)}, writes nothing). Read-write locks and semaphores: {@link SharedQueue}. A waiting acquisition is tried again when (a) on PostgreSQL, the releasing statement
 * NOTIFYs this client with the acquisition id of the first live waiter; (b) the client's single
 * poller finds the lock free or its holder's lease run out (a crashed holder); the poller runs one
 * query for all of this client's waiters, with a back-off from 10 ms doubling to 100 ms where no
 * NOTIFY arrives (MariaDB, H2, a PostgreSQL LISTEN connection that is down; back to 10 ms while a
 * waited-for lock keeps changing hands between polls), or to a third of the
 * waiter lease on PostgreSQL, and never later than the earliest blocking holder's expiry. The same
 * poll refreshes every waiter row of this client in one statement (the waiter lease, equal to the
 * lease time), so a crashed client's waiter rows stop counting after the lease time and are deleted
 * by the next waiter of that lock.
 *
 * <p>Hand-over (PostgreSQL, {@code fair=true}): the release is {@link JdbcStatements#handOver},
 * one statement that clears this owner and, if a live waiter stands in the queue, makes the first
 * one the owner with the next token and a lease of that waiter's own {@code leaseTime} (stored
 * with its waiter row; a row of an older version has none and gets the releaser's), marks that
 * waiter's row as handed over (its {@code token} column set to the grant's token), deletes the
 * releaser's own waiter row if one is left, and NOTIFYs {@code H<token> <acquisition>} to the new
 * owner's client. A hand-off between clients is then one commit and one NOTIFY, instead of a
 * release commit, a NOTIFY, and the waiter's own grant commit. Why it is safe:
 *
 * <ul>
 *   <li><b>Tokens rise with every grant.</b> The hand-over increments the row's token under the
 *       row lock its {@code UPDATE} takes, as every grant does; it only changes a row still owned
 *       by the releaser, so two grants never race for one row.
 *   <li><b>Queue order.</b> The new owner is the live waiter ({@code expires_ms} not passed by the
 *       database's clock, token 0) with the lowest {@code seq}, which is the one the fair grant
 *       would let in; a handed row (token above 0) no longer counts as a waiter for anyone.
 *   <li><b>A withdrawal racing the hand-over</b> (the waiter timed out, was interrupted or
 *       cancelled): a withdrawal deletes the waiter row, then runs the release statement for the
 *       same acquisition. The hand-over picks its waiter {@code FOR UPDATE}. If the delete
 *       committed first, the pick skips that row (READ COMMITTED re-checks a locked row and drops
 *       it) and hands to the next waiter; if the pick locked the row first, the delete waits for
 *       the hand-over's commit, and the withdrawal's release then finds itself the owner and hands
 *       the row on. Either way no withdrawn waiter is left owning a row (tested in a loop of races
 *       against PostgreSQL: nothing owned within 3 s, against a 30 s lease).
 *   <li><b>A lost NOTIFY.</b> The waiter's poll reads its row and its lock's: owner = itself with
 *       lease left completes the wait (also a grant whose reply was lost); a handed row whose lock
 *       it no longer owns means that lease ran out unseen, and the wait ends with {@link
 *       EntryLostException} (the engine queues again; the row becomes a waiter again at its old
 *       place). After the LISTEN connection comes back every waiter is tried and the poll runs.
 *   <li><b>Validity.</b> The new owner's client did not send the grant. The NOTIFY carries the
 *       lease the grant was given, which the waiter counts from before it queued; otherwise (a long
 *       wait, a lost NOTIFY) it reads the row's remaining lease ({@code expires_ms - now()}, a
 *       read, no commit) and counts it from before the read was sent, less the margin; the poll
 *       does the same from before its query.
 *   <li><b>A waiter whose client died</b> (or was cut off) while its row was live: the hand-over
 *       makes it owner of a lease nobody renews; the lock is free again when that lease runs out,
 *       and the next waiter's poll, which reads the holder's expiry, takes it right after. That
 *       lease is the dead waiter's own {@code leaseTime}, never the releaser's (which may be far
 *       longer): the crash-release bound of a grant is its owner's lease time however it was
 *       granted. Without the hand-over, that dead waiter's row blocked the fair queue for its
 *       waiter lease (the same {@code leaseTime}), so the bound is unchanged.
 * </ul>
 *
 * <p>Validity: the ticker is read before a grant or renewal is sent, and the grant is valid until
 * that reading plus the lease time less a margin (1% + 2 ms) for rate differences between the
 * clocks; the database decides the real expiry with its own clock.
 *
 * <p>Concurrency: statements run on the backend's workers, timers on its timer thread; the first
 * try of an enqueue or a release whose caller only waits runs on the caller's thread instead
 * ({@link JdbcBackend#submit(JdbcBackend.Work, boolean)}), so its completion runs there too. A waiter's
 * fields are guarded by its monitor, held only for bookkeeping; at most one grant attempt per
 * waiter is in flight, and a wake-up that arrives meanwhile runs one more after it. The poller's
 * schedule is guarded by this protocol's monitor.
 */
final class JdbcLockProtocol implements LockProtocol {
    private static final Logger log = LoggerFactory.getLogger(JdbcLockProtocol.class);

    static final String ANY = "*";
    static final long MIN_POLL_MS = 10;
    static final long MAX_POLL_MS = 100;

    private final JdbcBackend backend;
    private final JdbcStatements sql;
    private final Ticker ticker;
    private final long leaseMs;
    private final long leaseNanos;
    private final long marginNanos;
    private final long waiterMs;
    private final boolean fair;
    private final Map<String, Waiter> waiters = new ConcurrentHashMap<>();
    /**
     * Exclusive acquisitions granted after they queued (a waiter row was written for them), until
     * released: a hint that someone may queue behind them too. Only a hint: the release's plain
     * update checks for waiters itself.
     */
    private final java.util.Set<String> waited = ConcurrentHashMap.newKeySet();

    /** Granted acquisitions whose waiter row is still to be deleted ({@link #deleteLater}). */
    private final Map<String, Boolean> deleting = new ConcurrentHashMap<>();

    @GuardedBy("this")
    private @Nullable ScheduledFuture<?> pollTimer;

    @GuardedBy("this")
    private long pollTimerAt;

    @GuardedBy("this")
    private boolean polling;

    @GuardedBy("this")
    private boolean pollAgain;

    @GuardedBy("this")
    private long pollDelayMs = MIN_POLL_MS;

    private volatile long lastBeatNanos;

    JdbcLockProtocol(JdbcBackend backend) {
        this.backend = backend;
        this.sql = backend.sql;
        this.ticker = backend.options.ticker();
        this.leaseMs = Math.max(1, backend.options.leaseTime().toMillis());
        this.leaseNanos = TimeUnit.MILLISECONDS.toNanos(leaseMs);
        this.marginNanos = leaseNanos / 100 + TimeUnit.MILLISECONDS.toNanos(2);
        this.waiterMs = leaseMs;
        this.fair = backend.options.fair();
        this.lastBeatNanos = ticker.read();
    }

    // ---- statements

    /** Tries the grant; the token, or null if the lock is taken (or a live waiter is ahead). */
    @Nullable
    Long grant(Connection c, String name, String acquisition, long seqBound) throws SQLException {
        long bound = fair ? seqBound : Long.MIN_VALUE;
        if (seqBound == Long.MAX_VALUE && sql.grantFree != null) {
            // No waiter row of its own (a first try): the lock row alone answers if no one waits.
            Long token = grantFree(c, name, acquisition);
            if (token != null) {
                return token;
            }
            if (ensureRow(c, name)) {
                return grantFree(c, name, acquisition); // first use of this name: no one waits
            }
            if (!fair) {
                return null; // the full grant asks no more than this one
            }
            // Taken, or the flag is stale (a waiter gave up, or its row expired): the full grant
            // decides, and clears the flag if no one waits.
            return grantOnce(c, name, acquisition, bound);
        }
        Long token = grantOnce(c, name, acquisition, bound);
        if (token == null && sql.ensureRow != null && ensureRow(c, name)) {
            token = grantOnce(c, name, acquisition, bound); // first use of this name
        }
        return token;
    }

    /** MariaDB/MySQL: {@link JdbcStatements#grantFree}. */
    private @Nullable Long grantFree(Connection c, String name, String acquisition) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.grantFree, Statement.RETURN_GENERATED_KEYS)) {
            bindNewOwner(ps, acquisition);
            ps.setString(5, name);
            ps.setInt(6, fair ? 0 : 1);
            return updatedToken(ps);
        }
    }

    private @Nullable Long grantOnce(Connection c, String name, String acquisition, long bound) throws SQLException {
        switch (sql.dialect) {
            case POSTGRESQL -> {
                try (PreparedStatement ps = c.prepareStatement(sql.grant)) {
                    ps.setString(1, name);
                    ps.setString(2, acquisition);
                    ps.setString(3, backend.clientId);
                    ps.setLong(4, leaseMs);
                    ps.setString(5, backend.holder);
                    ps.setLong(6, bound);
                    try (ResultSet rs = ps.executeQuery()) {
                        return rs.next() ? rs.getLong(1) : null;
                    }
                }
            }
            case H2 -> {
                try (PreparedStatement ps = c.prepareStatement(sql.grant)) {
                    bindUpdateGrant(ps, name, acquisition, bound);
                    try (ResultSet rs = ps.executeQuery()) {
                        return rs.next() ? rs.getLong(1) : null;
                    }
                }
            }
            case MARIADB -> {
                try (PreparedStatement ps = c.prepareStatement(sql.grant, Statement.RETURN_GENERATED_KEYS)) {
                    bindNewOwner(ps, acquisition);
                    ps.setString(5, acquisition);
                    ps.setString(6, name);
                    ps.setString(7, name);
                    ps.setLong(8, bound);
                    return updatedToken(ps);
                }
            }
            default -> throw new AssertionError(sql.dialect);
        }
    }

    /** Runs a MariaDB grant; the token it set through {@code LAST_INSERT_ID(expr)}, or null if it changed no row. */
    private static @Nullable Long updatedToken(PreparedStatement ps) throws SQLException {
        if (ps.executeUpdate() != 1) {
            return null;
        }
        try (ResultSet rs = ps.getGeneratedKeys()) {
            if (!rs.next()) {
                throw new SQLException("the grant took the row but LAST_INSERT_ID() was not returned");
            }
            return rs.getLong(1);
        }
    }

    private void bindUpdateGrant(PreparedStatement ps, String name, String acquisition, long bound)
            throws SQLException {
        bindNewOwner(ps, acquisition);
        ps.setString(5, name);
        ps.setString(6, name);
        ps.setLong(7, bound);
    }

    /** The first four parameters of an {@code UPDATE} grant: owner, client, lease ms, holder. */
    private void bindNewOwner(PreparedStatement ps, String acquisition) throws SQLException {
        ps.setString(1, acquisition);
        ps.setString(2, backend.clientId);
        ps.setLong(3, leaseMs);
        ps.setString(4, backend.holder);
    }

    /** Creates the lock's row with token 0 if absent; true if it was created now. */
    private boolean ensureRow(Connection c, String name) throws SQLException {
        String ensure = sql.ensureRow;
        if (ensure == null) {
            return false;
        }
        try (PreparedStatement ps = c.prepareStatement(ensure)) {
            ps.setString(1, name);
            if (sql.dialect == JdbcDialect.H2) {
                ps.setString(2, name);
            }
            return ps.executeUpdate() == 1;
        } catch (SQLException e) {
            if (String.valueOf(e.getSQLState()).startsWith("23")) {
                return false; // another client created it first
            }
            throw e;
        }
    }

    private long insertWaiter(Connection c, String name, String acquisition) throws SQLException {
        try (PreparedStatement purge = c.prepareStatement(sql.purgeWaiters)) {
            purge.setString(1, name);
            purge.executeUpdate();
        }
        long seq = insertWaiterRow(c, name, acquisition);
        String mark = sql.markQueued;
        if (mark != null) {
            // After the row's commit, never before: see JdbcStatements#grantFree.
            try (PreparedStatement ps = c.prepareStatement(mark)) {
                ps.setString(1, name);
                ps.executeUpdate();
            }
        }
        return seq;
    }

    private long insertWaiterRow(Connection c, String name, String acquisition) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.insertWaiter, new String[] {"seq"})) {
            ps.setString(1, name);
            ps.setString(2, acquisition);
            ps.setString(3, backend.clientId);
            ps.setLong(4, waiterMs);
            ps.setString(5, backend.holder);
            ps.setLong(6, leaseMs);
            ps.executeUpdate();
            try (ResultSet rs = ps.getGeneratedKeys()) {
                if (!rs.next()) {
                    throw new SQLException("no seq returned for the waiter row");
                }
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            if (!String.valueOf(e.getSQLState()).startsWith("23")) {
                throw e;
            }
            // The row is there already (an enqueue again after a wrongly presumed loss): keep its place,
            // as a waiter again if a hand-over had marked it (whose lease then ran out unseen).
            try (PreparedStatement ps = c.prepareStatement(sql.rewait)) {
                ps.setString(1, acquisition);
                ps.executeUpdate();
            }
            try (PreparedStatement ps = c.prepareStatement(sql.findWaiter)) {
                ps.setString(1, acquisition);
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        return rs.getLong(1);
                    }
                }
            }
            throw e;
        }
    }

    private void deleteWaiter(Connection c, String acquisition) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.deleteWaiter)) {
            ps.setString(1, acquisition);
            ps.executeUpdate();
        }
    }

    /** Deletes a granted waiter's row; a failure only delays others until the row's lease runs out. */
    private void deleteGrantedWaiter(Connection c, String name, String acquisition) {
        try {
            deleteWaiter(c, acquisition);
        } catch (SQLException e) {
            log.warn(
                    "[lock={} state=HELD] could not delete the waiter row of granted {}: {}",
                    name,
                    acquisition,
                    backend.message(e));
        }
    }

    /** {@code withdrawn}: a waiting entry's withdrawal, which is seldom the owner. */
    private void releaseHeld(Connection c, String name, String acquisition, boolean withdrawn) throws SQLException {
        String handOver = sql.handOver;
        boolean queued = waited.remove(acquisition) || withdrawn;
        if (deleting.remove(acquisition) != null) {
            deleteWaiter(c, acquisition); // released before its deferred delete ran
        }
        if (fair && handOver != null) {
            String alone = sql.releaseAlone;
            // Granted at its first try, so probably no one queues behind it: the plain update first,
            // which releases only if that is so (about 50 us of the database's time less per cycle
            // than the hand-over statement, measured). One that waited hands over directly.
            if (!queued && alone != null) {
                try (PreparedStatement ps = c.prepareStatement(alone)) {
                    ps.setString(1, name);
                    ps.setString(2, acquisition);
                    ps.setString(3, name);
                    ps.setString(4, acquisition);
                    if (ps.executeUpdate() == 1) {
                        return;
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement(handOver)) {
                ps.setString(1, name);
                ps.setString(2, acquisition);
                ps.setLong(3, leaseMs); // only for a waiter row an older version wrote
                ps.setString(4, name);
                ps.setString(5, acquisition);
                ps.setString(6, acquisition);
                ps.executeQuery().close();
            }
            return;
        }
        // MariaDB could hand over in a transaction (the same steps, the lock row locked first), but that
        // costs four round trips per release: measured, W1 fell from 2,058 to 1,005 cycles/s while W3
        // stayed at about 140 hand-offs/s (its waiters learn of the hand-over only by their poll). So
        // the release stays one statement there until MariaDB has a way to wake the waiter.
        try (PreparedStatement ps = c.prepareStatement(sql.release)) {
            ps.setString(1, name);
            ps.setString(2, acquisition);
            if (sql.dialect == JdbcDialect.POSTGRESQL) {
                ps.setString(3, acquisition);
                ps.executeQuery().close();
            } else {
                ps.executeUpdate();
            }
        }
    }

    // ---- enqueue

    record Outcome(@Nullable Long token, long seq) {}

    @Override
    public CompletionStage<Position> enqueue(LockRequest request) {
        return enqueue(request, false);
    }

    /** The first try runs on the caller when it only waits (see {@link JdbcBackend#submit(JdbcBackend.Work, boolean)}). */
    @Override
    public CompletionStage<Position> enqueue(LockRequest request, boolean callerWaits) {
        String name = request.lockName();
        String acq = request.acquisitionId();
        SharedQueue.@Nullable Request shared = null;
        String key = name;
        if (request.mode() != LockMode.EXCLUSIVE) {
            key = SharedQueue.key(request.mode(), name);
            shared = new SharedQueue.Request(
                    key,
                    SharedQueue.kind(request.mode()),
                    request.permits(),
                    request.maxPermits(),
                    SharedQueue.acquisitionOf(request.grantedDespite()));
        }
        QueueEntry entry = new QueueEntry(name, acq, key + "#" + acq, 0, 0);
        // Registered before the statements go out: a NOTIFY that arrives before awaitTurn is kept.
        Waiter w = new Waiter(entry, shared);
        waiters.put(acq, w);
        CompletableFuture<Position> result = new CompletableFuture<>();
        enqueue(entry, w, result, 0, ticker.read(), callerWaits);
        return result;
    }

    /**
     * One try of an enqueue; a transient failure (a dropped connection, a restarted database) is
     * tried again with the same acquisition id, and the retry first looks for what the failed try
     * may have written.
     */
    private void enqueue(
            QueueEntry entry,
            Waiter w,
            CompletableFuture<Position> result,
            int attempt,
            long firstSentAt,
            boolean onCaller) {
        String name = entry.lockName();
        String acq = entry.acquisitionId();
        // A grant found by a retry may have been made by the first try: validity counts from there.
        long t0 = firstSentAt;
        // One grant attempt, no waiter row yet: that is written by the first awaitTurn, so a caller that
        // gives up at once (tryAcquire(ZERO)) leaves no trace and its withdrawal costs no statement.
        SharedQueue.Request sh = w.shared;
        backend.submit(
                        c -> {
                            if (sh != null) {
                                return sharedAttempt(c, acq, sh, false); // finds its own row after a lost reply
                            }
                            if (attempt > 0) {
                                Outcome earlier = findOwn(c, name, acq);
                                if (earlier != null) {
                                    return earlier;
                                }
                            }
                            return new Outcome(grant(c, name, acq, Long.MAX_VALUE), -1);
                        },
                        onCaller)
                .whenComplete((outcome, error) -> {
                    if (error != null) {
                        if (JdbcBackend.transientFailure(error)
                                && attempt < backend.options.retryPolicy().maxRetries()
                                && !backend.isClosed()
                                && !w.isCancelled()
                                && backend.schedule(
                                                () -> enqueue(entry, w, result, attempt + 1, firstSentAt, false),
                                                backoffMs(attempt))
                                        != null) {
                            return;
                        }
                        waiters.remove(acq, w);
                        w.cancel();
                        result.completeExceptionally(failure(name, "acquire", error));
                        return;
                    }
                    Long token = outcome.token();
                    if (token != null) {
                        waiters.remove(acq, w);
                        w.cancel();
                        result.complete(Position.granted(granted(entry, token, t0)));
                        return;
                    }
                    w.seq(outcome.seq());
                    result.complete(Position.waiting(entry, ANY));
                });
    }

    /** What an earlier try of this acquisition left: a grant, a waiter row, or nothing (null). */
    private @Nullable Outcome findOwn(Connection c, String name, String acq) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.findHeld)) {
            ps.setString(1, name);
            ps.setString(2, acq);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    return new Outcome(rs.getLong(1), 0);
                }
            }
        }
        try (PreparedStatement ps = c.prepareStatement(sql.findWaiter)) {
            ps.setString(1, acq);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    return new Outcome(null, rs.getLong(1));
                }
            }
        }
        return null;
    }

    private Grant granted(QueueEntry entry, long token, long sentAtNanos) {
        return new Grant(entry, token, sentAtNanos + leaseNanos - marginNanos);
    }

    /**
     * A grant this client did not make (a hand-over): valid for what the database said was left of
     * it, counted from before the question was sent, less the margin on that.
     */
    private Grant handed(QueueEntry entry, long token, long sentAtNanos, long remainingMs) {
        long remaining = TimeUnit.MILLISECONDS.toNanos(remainingMs);
        return new Grant(entry, token, sentAtNanos + remaining - remaining / 100 - TimeUnit.MILLISECONDS.toNanos(2));
    }

    // ---- waiting

    /** One waiting acquisition of this client. */
    private final class Waiter {
        final QueueEntry entry;
        /** What a read-write or semaphore entry asks for; null for an exclusive lock. */
        final SharedQueue.@Nullable Request shared;

        /** Read before any statement of this acquisition: earlier than any grant it can be handed. */
        final long createdAt;

        /** The holder the last poll saw (the poller's thread only; volatile for the next poll's thread). */
        volatile @Nullable String lastOwner;

        /** The row's arrival order, once its insert is confirmed; -1 before. */
        @GuardedBy("this")
        long seq = -1;

        /** Whether a row may have been written for it (an insert was sent). */
        @GuardedBy("this")
        boolean mayHaveRow;

        @GuardedBy("this")
        @Nullable
        CompletableFuture<Position> pending;

        @GuardedBy("this")
        boolean kicked;

        @GuardedBy("this")
        boolean checking;

        @GuardedBy("this")
        boolean again;

        @GuardedBy("this")
        boolean gone;

        /**
         * The token of the grant that completed the wait from the rows or a hand-over; -1 before.
         * An attempt in flight that answers with this same token took that same grant (the poll
         * saw its update before its reply came): it is the caller's lease, not a late grant.
         */
        @GuardedBy("this")
        long grantedToken = -1;

        /** Completes once the attempt in flight has been answered; null while none ever was. */
        @GuardedBy("this")
        @Nullable
        CompletableFuture<Void> inflight;

        Waiter(QueueEntry entry, SharedQueue.@Nullable Request shared) {
            this.entry = entry;
            this.shared = shared;
            this.createdAt = ticker.read();
        }

        synchronized void seq(long seq) {
            this.seq = seq;
        }

        synchronized boolean awaiting() {
            return !gone && pending != null && !pending.isDone();
        }

        /** Awaiting, with its row confirmed: a poll that does not find the row may call it lost. */
        synchronized boolean judged() {
            return awaiting() && seq >= 0;
        }

        /** Awaiting, with no row confirmed and no attempt in flight: its insert must be (re)tried. */
        synchronized boolean unqueued() {
            return awaiting() && seq < 0 && !checking;
        }

        /**
         * Tries the grant now, or once more after the attempt in flight. The first try writes the
         * waiter row, and tries once more after it, since the holder may have left in between.
         */
        void check() {
            check(null);
        }

        /**
         * As {@link #check()}; with {@code own}, the attempt runs at once on that connection (a
         * doorbell's, on its thread, which has just been rung): a worker hand-off less per hand-off.
         */
        void check(@Nullable Connection own) {
            long bound;
            boolean insert;
            CompletableFuture<Void> answered;
            synchronized (this) {
                if (gone || pending == null || pending.isDone()) {
                    kicked = true;
                    return;
                }
                if (checking) {
                    again = true;
                    return;
                }
                checking = true;
                bound = seq;
                insert = seq < 0;
                mayHaveRow |= insert;
                answered = new CompletableFuture<>();
                inflight = answered;
            }
            long t0 = ticker.read();
            String name = entry.lockName();
            String acq = entry.acquisitionId();
            SharedQueue.Request sh = shared;
            JdbcBackend.Work<Outcome> attempt = c -> {
                if (sh != null) {
                    return sharedAttempt(c, acq, sh, true);
                }
                long s = insert ? insertWaiter(c, name, acq) : bound;
                Long token = grant(c, name, acq, s);
                if (token != null) {
                    if (backend.doorbell == null) {
                        deleteGrantedWaiter(c, name, acq);
                    } else {
                        // After the caller has its grant (see deleteLater), while it holds.
                        deleting.put(acq, Boolean.TRUE);
                    }
                }
                return new Outcome(token, s);
            };
            (own == null ? backend.submit(attempt) : JdbcBackend.runOn(own, attempt)).whenComplete((outcome, error) -> {
                try {
                    onReply(outcome, error, t0);
                } finally {
                    answered.complete(null);
                    if (deleting.containsKey(acq)) {
                        deleteLater(name, acq);
                    }
                }
            });
        }

        private void onReply(@Nullable Outcome outcome, @Nullable Throwable error, long t0) {
            CompletableFuture<Position> done = null;
            Throwable refused = null;
            Long token = error == null && outcome != null ? outcome.token() : null;
            boolean runAgain;
            boolean ended;
            long handedToken;
            synchronized (this) {
                handedToken = grantedToken;
                checking = false;
                runAgain = again;
                again = false;
                if (outcome != null && outcome.seq() >= 0) {
                    seq = outcome.seq();
                }
                ended = gone;
                if (!ended) {
                    Throwable cause = error;
                    while (cause instanceof CompletionException && cause.getCause() != null) {
                        cause = cause.getCause();
                    }
                    if (cause instanceof IllegalArgumentException) {
                        // A semaphore opened with another total: no retry can change that.
                        gone = true;
                        done = pending;
                        refused = cause;
                    } else if (token == null) {
                        if (error != null) {
                            // Transient or not, keep waiting: the poller tries again, and the waiter row
                            // expires if the database stays away, which ends in EntryLostException.
                            log.debug(
                                    "[lock={} state=QUEUED] grant attempt failed: {}",
                                    entry.lockName(),
                                    backend.message(error));
                        }
                    } else {
                        gone = true;
                        done = pending;
                    }
                }
            }
            if (ended) {
                if (token != null && token != handedToken) {
                    giveBackLateGrant(token);
                }
                return;
            }
            if (done == null) {
                if (runAgain) {
                    check();
                } else if (token == null && error == null && outcome != null && outcome.seq() >= 0) {
                    MariaDbDoorbell bells = backend.doorbell;
                    MariaDbDoorbell.Bell bell = bells == null ? null : bells.assigned(entry.acquisitionId());
                    if (bell != null) {
                        bell.watch(entry.lockName(), outcome.seq(), this::check, this::awaiting);
                    }
                }
                return;
            }
            waiters.remove(entry.acquisitionId(), this);
            if (refused != null) {
                done.completeExceptionally(refused);
            } else if (token != null) {
                if (shared == null) {
                    waited.add(entry.acquisitionId());
                }
                done.complete(Position.granted(granted(entry, token, t0)));
            }
        }

        void await(CompletableFuture<Position> f) {
            boolean now;
            synchronized (this) {
                if (gone) {
                    f.completeExceptionally(new EntryLostException(entry, "it was released"));
                    return;
                }
                pending = f;
                now = kicked || seq < 0;
                kicked = false;
            }
            schedulePoll(MIN_POLL_MS, true);
            if (!now) {
                return;
            }
            MariaDbDoorbell.Bell bell = bell();
            if (bell != null) {
                // Its own bell is held before its row is written: a waiter that queues behind it finds
                // it in use and blocks on it.
                bell.armed().whenComplete((x, e) -> check());
            } else {
                check();
            }
        }

        /** This exclusive waiter's doorbell (MariaDB/MySQL), or null: then only the poll wakes it. */
        private MariaDbDoorbell.@Nullable Bell bell() {
            MariaDbDoorbell bells = backend.doorbell;
            return bells == null || shared != null
                    ? null
                    : bells.bell(entry.acquisitionId(), JdbcLockProtocol.this::live);
        }

        /**
         * A release handed the lock to this waiter (its NOTIFY said so): reads the row for the
         * lease's remaining time, the one thing the payload cannot say, and completes the wait.
         */
        void handedOver(long token, long leaseMs) {
            synchronized (this) {
                if (gone || pending == null || pending.isDone()) {
                    return; // withdrawn: the withdrawal's release hands the row on
                }
            }
            long t0 = ticker.read();
            // The hand-over was made after this waiter existed (it needs the waiter's row), so its
            // lease counted from createdAt ends no later than the database's. If that leaves at least
            // 9/10 of the lease, grant without reading the row back: one round trip and one worker
            // hop less per hand-off. Otherwise (a long wait, a stale payload) the read decides.
            if (leaseMs > 0 && t0 - createdAt <= TimeUnit.MILLISECONDS.toNanos(leaseMs) / 10) {
                grantedBy(token, createdAt, leaseMs);
                return;
            }
            String name = entry.lockName();
            String acq = entry.acquisitionId();
            backend.submit(c -> {
                        try (PreparedStatement ps = c.prepareStatement(sql.findHanded)) {
                            ps.setString(1, name);
                            ps.setString(2, acq);
                            try (ResultSet rs = ps.executeQuery()) {
                                return rs.next() ? new long[] {rs.getLong(1), rs.getLong(2)} : null;
                            }
                        }
                    })
                    .whenComplete((row, error) -> {
                        if (error != null) {
                            // The poll is the backstop: it finds the hand-over in the waiter row.
                            log.debug(
                                    "[lock={} state=QUEUED] reading a hand-over failed: {}",
                                    name,
                                    backend.message(error));
                            schedulePoll(MIN_POLL_MS, true);
                        } else if (row == null || row[0] != token || row[1] <= 0) {
                            // Not (or no longer) the owner: its lease ran out before this client learned
                            // of it, or the payload is stale. The poll decides from the rows.
                            schedulePoll(0, true);
                        } else {
                            grantedBy(row[0], t0, row[1]);
                        }
                    });
        }

        /** Completes the wait with a hand-over's grant, unless it ended meanwhile. */
        void grantedBy(long token, long sentAtNanos, long remainingMs) {
            CompletableFuture<Position> done;
            synchronized (this) {
                if (gone || pending == null || pending.isDone()) {
                    return;
                }
                gone = true;
                done = pending;
                grantedToken = token;
            }
            waiters.remove(entry.acquisitionId(), this);
            waited.add(entry.acquisitionId());
            done.complete(Position.granted(handed(entry, token, sentAtNanos, remainingMs)));
        }

        /** The poll found no row for this waiter: it expired and was purged. */
        void lost() {
            CompletableFuture<Position> done;
            synchronized (this) {
                if (gone || checking || pending == null || pending.isDone()) {
                    return;
                }
                gone = true;
                done = pending;
            }
            waiters.remove(entry.acquisitionId(), this);
            done.completeExceptionally(new EntryLostException(
                    entry, "its waiter row is gone (it expired while this client could not refresh it)"));
        }

        synchronized void cancel() {
            gone = true;
        }

        /**
         * Stops it; completes, once no attempt of it is in flight, with whether a row may exist for
         * it (else its withdrawal needs no statement). An attempt in flight may still insert its row
         * or take the grant: a withdrawal that ran before it would leave them behind.
         */
        synchronized CompletableFuture<Boolean> withdraw() {
            gone = true;
            boolean mayHave = mayHaveRow;
            CompletableFuture<Void> last = inflight;
            return last == null ? CompletableFuture.completedFuture(mayHave) : last.thenApply(x -> mayHave);
        }

        synchronized boolean isCancelled() {
            return gone;
        }

        /**
         * This attempt took the row after the acquisition had ended: a hand-over completed it while
         * the attempt was on its way (the handed lease may even have been released already, leaving
         * the row free for this attempt), or it was withdrawn. Nobody will renew or release that
         * grant, so it is released now instead of blocking the lock for a whole lease. Only this
         * ended acquisition is named as owner, so the release touches no one else's grant.
         */
        private void giveBackLateGrant(long token) {
            log.debug(
                    "[lock={} state=RELEASING] grant attempt of {} took the lock (token {}) after it ended; releasing it",
                    entry.lockName(),
                    entry.acquisitionId(),
                    token);
            release(entry, false, new CompletableFuture<>(), 0, ticker.read(), false);
        }
    }

    @Override
    public CompletionStage<Position> awaitTurn(Position waiting) {
        CompletableFuture<Position> result = new CompletableFuture<>();
        Waiter w = waiters.get(waiting.entry().acquisitionId());
        if (w == null) {
            result.completeExceptionally(new EntryLostException(waiting.entry(), "it is not waiting here"));
            return result;
        }
        w.await(result);
        return result;
    }

    /**
     * A NOTIFY on this client's channel: {@code H<token> <acquisition>} says a release handed the
     * lock to that waiter; a bare acquisition id says that waiter is first in line.
     */
    void onWake(String payload) {
        if (payload.startsWith(JdbcInspector.FORCED_HELD) || payload.startsWith(JdbcInspector.FORCED_ENTRY)) {
            onForced(payload);
            return;
        }
        if (payload.startsWith("H")) {
            int space = payload.indexOf(' ');
            long token;
            try {
                token = Long.parseLong(payload.substring(1, Math.max(1, space)));
            } catch (NumberFormatException e) {
                return; // not ours; the poll finds any hand-over
            }
            // "H<token> <acquisition> <lease ms>"; an older client's hand-over has no lease ms.
            int second = space < 0 ? -1 : payload.indexOf(' ', space + 1);
            long leaseMs = -1;
            if (second > 0) {
                try {
                    leaseMs = Long.parseLong(payload.substring(second + 1));
                } catch (NumberFormatException e) {
                    leaseMs = -1;
                }
            }
            Waiter w = waiters.get(payload.substring(space + 1, second > 0 ? second : payload.length()));
            if (w != null) {
                w.handedOver(token, leaseMs);
            }
            return;
        }
        Waiter w = waiters.get(payload);
        if (w != null) {
            w.check();
        }
    }

    /**
     * A NOTIFY that an operator removed one of this client's grants by force ({@link
     * JdbcInspector#forceRelease}): {@code FX<acquisition> <lock name>} for an exclusive lock, {@code
     * FE<acquisition> <row name>} for a read-write or semaphore entry. The engine turns the lease
     * that holds that entry lost; one this client no longer holds is ignored there.
     */
    private void onForced(String payload) {
        int space = payload.indexOf(' ');
        if (space < 0) {
            return;
        }
        String acq = payload.substring(2, space);
        String row = payload.substring(space + 1);
        String name = payload.startsWith(JdbcInspector.FORCED_HELD) ? row : row.substring(row.indexOf('/') + 1);
        backend.forcedListener.accept(new QueueEntry(name, acq, row + "#" + acq, 0, 0));
    }

    /**
     * Tries every waiter once, and polls, after wake-ups may have been missed (the LISTEN
     * connection came back): a hand-over whose NOTIFY was lost is found by the poll.
     */
    void kickAll() {
        for (Waiter w : waiters.values()) {
            w.check();
        }
        if (!waiters.isEmpty()) {
            schedulePoll(0, true);
        }
    }

    /**
     * Deletes the waiter row of an acquisition granted by its own attempt, off the hand-off's path
     * (MariaDB: one commit less between a release and the next holder's return). Until it is gone,
     * the row only stands behind its own owner (nobody can be granted anyway); a release that comes
     * first deletes it itself ({@link #releaseHeld}).
     */
    private void deleteLater(String name, String acq) {
        backend.submit(c -> {
                    if (deleting.containsKey(acq)) {
                        deleteGrantedWaiter(c, name, acq);
                    }
                    return null;
                })
                .whenComplete((x, e) -> deleting.remove(acq));
    }

    /** Whether an acquisition may keep its doorbell: it waits, or holds after waiting. */
    private boolean live(String acquisition) {
        return waiters.containsKey(acquisition) || waited.contains(acquisition);
    }

    /** Whether the waiter is blocked on its predecessor's doorbell, which then wakes it. */
    private boolean listening(String acquisition) {
        MariaDbDoorbell bells = backend.doorbell;
        return bells != null && bells.listening(acquisition);
    }

    // ---- the poller: one per client, one query for all its waiters

    private long maxPollMs() {
        return backend.notified() ? Math.max(MIN_POLL_MS, waiterMs / 3) : Math.min(MAX_POLL_MS, waiterMs / 3);
    }

    /** Runs the poll within {@code delayMs} (earlier if one is already due); {@code reset} restarts the back-off. */
    private synchronized void schedulePoll(long delayMs, boolean reset) {
        if (reset) {
            pollDelayMs = MIN_POLL_MS;
        }
        if (polling) {
            pollAgain |= reset;
            if (!reset) {
                return;
            }
        }
        long at = ticker.read() + TimeUnit.MILLISECONDS.toNanos(delayMs);
        if (pollTimer != null && !pollTimer.isDone() && pollTimerAt - at <= 0) {
            return;
        }
        if (pollTimer != null) {
            pollTimer.cancel(false);
        }
        pollTimerAt = at;
        pollTimer = backend.schedule(this::poll, delayMs);
    }

    /** A waiter's row and its lock's: {@code handed} is the waiter row's token (above 0: handed over). */
    private record Row(long seq, @Nullable String owner, @Nullable Long remainingMs, long handed, long token) {}

    /** One poll's answer: exclusive waiters by acquisition; shared queues by name. */
    private record Status(Map<String, Row> rows, Map<String, List<SharedQueue.Entry>> queues) {}

    private void poll() {
        synchronized (this) {
            pollTimer = null;
            if (polling || backend.isClosed()) {
                return;
            }
            boolean any = false;
            for (Waiter w : waiters.values()) {
                any |= w.awaiting();
            }
            if (!any) {
                return;
            }
            polling = true;
            pollAgain = false;
        }
        // Only waiters whose rows were written before the query can be judged missing by it.
        java.util.Set<Waiter> judged = new java.util.HashSet<>();
        boolean exclusive = false;
        boolean shared = false;
        for (Waiter w : waiters.values()) {
            if (w.judged()) {
                judged.add(w);
                exclusive |= w.shared == null;
                shared |= w.shared != null;
            } else if (w.unqueued()) {
                w.check(); // its row's insert failed: try again
            }
        }
        boolean queryRows = exclusive;
        boolean queryQueues = shared;
        long now = ticker.read();
        boolean beat = now - lastBeatNanos >= TimeUnit.MILLISECONDS.toNanos(waiterMs / 3);
        backend.submit(c -> {
                    if (beat) {
                        try (PreparedStatement ps = c.prepareStatement(sql.heartbeat)) {
                            ps.setLong(1, waiterMs);
                            ps.setString(2, backend.clientId);
                            ps.executeUpdate();
                        }
                    }
                    Map<String, Row> rows = new HashMap<>();
                    if (queryRows) {
                        try (PreparedStatement ps = c.prepareStatement(sql.status)) {
                            ps.setString(1, backend.clientId);
                            try (ResultSet rs = ps.executeQuery()) {
                                while (rs.next()) {
                                    long remaining = rs.getLong(4);
                                    boolean noExpiry = rs.wasNull();
                                    rows.put(
                                            rs.getString(1),
                                            new Row(
                                                    rs.getLong(2),
                                                    rs.getString(3),
                                                    noExpiry ? null : remaining,
                                                    rs.getLong(5),
                                                    rs.getLong(6)));
                                }
                            }
                        }
                    }
                    Map<String, List<SharedQueue.Entry>> queues = new HashMap<>();
                    if (queryQueues) {
                        try (PreparedStatement ps = c.prepareStatement(sql.sharedStatus)) {
                            ps.setString(1, backend.clientId);
                            try (ResultSet rs = ps.executeQuery()) {
                                while (rs.next()) {
                                    queues.computeIfAbsent(rs.getString(1), k -> new ArrayList<>())
                                            .add(entry(rs, 2));
                                }
                            }
                        }
                    }
                    return new Status(rows, queues);
                })
                .whenComplete((status, error) -> {
                    long next;
                    boolean again;
                    synchronized (this) {
                        polling = false;
                        again = pollAgain;
                        pollDelayMs = Math.min(pollDelayMs * 2, maxPollMs());
                        next = pollDelayMs;
                    }
                    if (error != null) {
                        log.debug("[client={}] waiter poll failed: {}", JdbcBackend.NAME, backend.message(error));
                    } else {
                        if (beat) {
                            lastBeatNanos = now;
                        }
                        for (Waiter w : judged) {
                            if (w.awaiting()) {
                                SharedQueue.Request sh = w.shared;
                                next = Math.min(next, sh == null ? judge(w, status.rows(), now) : judge(w, sh, status));
                            }
                        }
                    }
                    schedulePoll(again ? MIN_POLL_MS : next, false);
                });
    }

    /** Acts on an exclusive waiter's row; returns when to look again at the latest, in ms. */
    private long judge(Waiter w, Map<String, Row> rows, long sentAtNanos) {
        String acq = w.entry.acquisitionId();
        Row r = rows.get(acq);
        String owner = r == null ? null : r.owner();
        Long remaining = r == null ? null : r.remainingMs();
        if (r == null) {
            w.lost();
        } else if (acq.equals(owner) && remaining != null && remaining > 0) {
            // It owns the row: a release handed it over (its NOTIFY was lost, or there is none), or a
            // grant attempt went through whose reply was lost.
            w.grantedBy(r.token(), sentAtNanos, remaining);
        } else if (r.handed() > 0) {
            w.lost(); // handed over, but its lease ran out before this client learned of it
        } else if (owner == null || remaining == null || remaining < 0) {
            w.check();
        } else {
            String before = w.lastOwner;
            w.lastOwner = owner;
            if (before != null && !before.equals(owner) && !backend.notified() && !listening(acq)) {
                // The lock changed hands since the last poll: it is busy, and without NOTIFY the next
                // release is only seen by a poll. Poll at the shortest interval while that goes on.
                return MIN_POLL_MS;
            }
            return remaining + 2;
        }
        return Long.MAX_VALUE;
    }

    /** Acts on a shared waiter's queue; returns when to look again at the latest, in ms. */
    private long judge(Waiter w, SharedQueue.Request shared, Status status) {
        List<SharedQueue.Entry> queue = status.queues().getOrDefault(shared.key(), List.of());
        String acq = w.entry.acquisitionId();
        if (SharedQueue.find(queue, acq) == null) {
            w.lost();
            return Long.MAX_VALUE;
        }
        List<SharedQueue.Entry> live = SharedQueue.live(queue);
        if (SharedQueue.find(live, acq) == null || SharedQueue.fits(live, acq, shared, fair)) {
            w.check();
            return Long.MAX_VALUE;
        }
        long soonest = SharedQueue.soonestExpiry(live);
        return soonest == Long.MAX_VALUE ? Long.MAX_VALUE : soonest + 2;
    }

    /** Reads a queue row whose columns start at {@code col}: acquisition, client, kind, permits, max, token, seq, remaining. */
    private static SharedQueue.Entry entry(ResultSet rs, int col) throws SQLException {
        return new SharedQueue.Entry(
                rs.getString(col),
                rs.getString(col + 1),
                rs.getString(col + 2).charAt(0),
                rs.getInt(col + 3),
                rs.getInt(col + 4),
                rs.getLong(col + 5),
                rs.getLong(col + 6),
                rs.getLong(col + 7));
    }

    // ---- read-write locks and semaphores: one short transaction per step (see SharedQueue)

    /**
     * One grant attempt of a shared entry, as one transaction serialized on the name's counter
     * row: purge what expired, read the queue, decide, write the grant or (with {@code insert}) the
     * waiter row, and on PostgreSQL wake whoever the purge let through.
     */
    Outcome sharedAttempt(Connection c, String acq, SharedQueue.Request r, boolean insert) throws SQLException {
        // READ COMMITTED: each statement sees what the previous holder of the counter row committed.
        return backend.inTransaction(c, Connection.TRANSACTION_READ_COMMITTED, () -> {
            long counter = lockCounter(c, r.key(), true);
            int purged;
            try (PreparedStatement ps = c.prepareStatement(sql.purgeWaiters)) {
                ps.setString(1, r.key());
                purged = ps.executeUpdate();
            }
            List<SharedQueue.Entry> queue = queue(c, r.key());
            SharedQueue.Entry own = SharedQueue.find(queue, acq);
            if (own != null && own.granted()) {
                return new Outcome(own.token(), own.seq()); // an earlier try was granted; its reply was lost
            }
            if (own == null && r.kind() == 'S') {
                for (SharedQueue.Entry e : queue) {
                    if (e.maxPermits() != r.maxPermits()) {
                        throw new IllegalArgumentException(
                                "semaphore '" + r.key().substring(2) + "' on "
                                        + JdbcBackend.NAME + " is in use with " + e.maxPermits()
                                        + " permits; this client opened it with " + r.maxPermits());
                    }
                }
            }
            Outcome out;
            if (SharedQueue.fits(queue, acq, r, fair)) {
                long token = counter + 1;
                try (PreparedStatement ps = c.prepareStatement(sql.setCounter)) {
                    ps.setLong(1, token);
                    ps.setString(2, r.key());
                    ps.executeUpdate();
                }
                long seq;
                if (own == null) {
                    seq = insertEntry(c, acq, r, leaseMs, token);
                    queue.add(new SharedQueue.Entry(
                            acq, backend.clientId, r.kind(), r.permits(), r.maxPermits(), token, seq, leaseMs));
                } else {
                    seq = own.seq();
                    try (PreparedStatement ps = c.prepareStatement(sql.grantEntry)) {
                        ps.setLong(1, token);
                        ps.setLong(2, leaseMs);
                        ps.setString(3, backend.holder);
                        ps.setString(4, acq);
                        ps.executeUpdate();
                    }
                    queue.set(queue.indexOf(own), own.grantedWith(token));
                }
                out = new Outcome(token, seq);
            } else if (own != null) {
                out = new Outcome(null, own.seq());
            } else if (insert) {
                long seq = insertEntry(c, acq, r, waiterMs, 0);
                queue.add(new SharedQueue.Entry(
                        acq, backend.clientId, r.kind(), r.permits(), r.maxPermits(), 0, seq, waiterMs));
                out = new Outcome(null, seq);
            } else {
                out = new Outcome(null, -1);
            }
            if (purged > 0) {
                wake(c, queue, acq);
            }
            return out;
        });
    }

    /** Removes a shared entry; on PostgreSQL also wakes, in the same transaction, whoever may now proceed. */
    private void sharedRelease(Connection c, String key, String acq) throws SQLException {
        if (sql.notify == null) {
            deleteWaiter(c, acq); // the other clients' pollers find out
            return;
        }
        backend.inTransaction(c, Connection.TRANSACTION_READ_COMMITTED, () -> {
            // Serialized with the grants of this name: two releases at once each see the other's
            // departure, so a waiter both let through is woken by the second.
            lockCounter(c, key, false);
            deleteWaiter(c, acq);
            wake(c, queue(c, key), acq);
            return Boolean.TRUE;
        });
    }

    /** The name's token counter, row-locked until commit; creates the row if {@code create}, else -1 if absent. */
    private long lockCounter(Connection c, String key, boolean create) throws SQLException {
        for (int attempt = 0; ; attempt++) {
            try (PreparedStatement ps = c.prepareStatement(sql.lockCounter)) {
                ps.setString(1, key);
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        return rs.getLong(1);
                    }
                }
            }
            if (!create || attempt > 0) {
                if (create) {
                    throw new SQLException("the counter row of '" + key + "' could not be created");
                }
                return -1;
            }
            try (PreparedStatement ps = c.prepareStatement(sql.ensureCounter)) {
                ps.setString(1, key);
                if (sql.dialect == JdbcDialect.H2) {
                    ps.setString(2, key);
                }
                ps.executeUpdate();
            } catch (SQLException e) {
                if (!String.valueOf(e.getSQLState()).startsWith("23")) {
                    throw e; // else another client created it first
                }
            }
        }
    }

    private List<SharedQueue.Entry> queue(Connection c, String key) throws SQLException {
        List<SharedQueue.Entry> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql.queue)) {
            ps.setString(1, key);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(entry(rs, 1));
                }
            }
        }
        return out;
    }

    private long insertEntry(Connection c, String acq, SharedQueue.Request r, long ms, long token) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.insertEntry, new String[] {"seq"})) {
            ps.setString(1, r.key());
            ps.setString(2, acq);
            ps.setString(3, backend.clientId);
            ps.setLong(4, ms);
            ps.setString(5, String.valueOf(r.kind()));
            ps.setInt(6, r.permits());
            ps.setInt(7, r.maxPermits());
            ps.setLong(8, token);
            ps.setString(9, backend.holder);
            ps.executeUpdate();
            try (ResultSet rs = ps.getGeneratedKeys()) {
                if (!rs.next()) {
                    throw new SQLException("no seq returned for the queue row");
                }
                return rs.getLong(1);
            }
        }
    }

    /** PostgreSQL: NOTIFYs the client of each waiting entry that may now be granted (never {@code self}). */
    private void wake(Connection c, List<SharedQueue.Entry> queue, String self) throws SQLException {
        String notify = sql.notify;
        if (notify == null) {
            return;
        }
        for (SharedQueue.Entry e : SharedQueue.grantable(queue, fair)) {
            if (e.acquisition().equals(self)) {
                continue;
            }
            try (PreparedStatement ps = c.prepareStatement(notify)) {
                ps.setString(1, "dlock_" + e.client());
                ps.setString(2, e.acquisition());
                ps.executeQuery().close();
            }
        }
    }

    // ---- release, renewal, recovery

    @Override
    public CompletionStage<Void> release(QueueEntry entry) {
        return release(entry, false);
    }

    /** A held entry's first try runs on the caller when it only waits; a withdrawal's never does. */
    @Override
    public CompletionStage<Void> release(QueueEntry entry, boolean callerWaits) {
        Waiter w = waiters.remove(entry.acquisitionId());
        CompletableFuture<Void> done = new CompletableFuture<>();
        MariaDbDoorbell bells = backend.doorbell;
        if (bells != null) {
            // After the release (or withdrawal) is committed, or failed: the waiter behind it tries now.
            done.whenComplete((x, e) -> bells.ring(entry.acquisitionId()));
        }
        if (w == null) {
            release(entry, false, done, 0, ticker.read(), callerWaits);
            return done;
        }
        w.withdraw().thenAccept(mayHaveRow -> {
            if (mayHaveRow) {
                release(entry, true, done, 0, ticker.read(), false);
            } else {
                // Never wrote its row (its caller gave up after the first attempt) and was never
                // granted: there is nothing to remove.
                done.complete(null);
            }
        });
        return done;
    }

    private void release(
            QueueEntry entry,
            boolean waiting,
            CompletableFuture<Void> done,
            int attempt,
            long start,
            boolean onCaller) {
        backend.submit(
                        c -> {
                            if (SharedQueue.isShared(entry.key())) {
                                sharedRelease(c, SharedQueue.keyOf(entry.key()), entry.acquisitionId());
                                return null;
                            }
                            if (waiting) {
                                deleteWaiter(c, entry.acquisitionId());
                            }
                            releaseHeld(c, entry.lockName(), entry.acquisitionId(), waiting);
                            return null;
                        },
                        onCaller)
                .whenComplete((x, error) -> {
                    if (error == null) {
                        done.complete(null);
                        if (!backend.notified() && !waiters.isEmpty()) {
                            schedulePoll(0, true); // a waiter of this client may be next
                        }
                        return;
                    }
                    // Retried through a database restart while the entry could still block others; after
                    // its lease it stops counting by itself.
                    if (JdbcBackend.transientFailure(error)
                            && !backend.isClosed()
                            && ticker.read() - start < leaseNanos
                            && backend.schedule(
                                            () -> release(entry, waiting, done, attempt + 1, start, false),
                                            backoffMs(attempt))
                                    != null) {
                        return;
                    }
                    done.completeExceptionally(failure(entry.lockName(), "release", error));
                });
    }

    @Override
    public CompletionStage<Grant> renew(Grant grant) {
        QueueEntry entry = grant.entry();
        long t0 = ticker.read();
        return backend.submit(c -> {
                    if (SharedQueue.isShared(entry.key())) {
                        try (PreparedStatement ps = c.prepareStatement(sql.renewEntry)) {
                            ps.setLong(1, leaseMs);
                            ps.setString(2, entry.acquisitionId());
                            ps.setLong(3, grant.fencingToken());
                            return ps.executeUpdate();
                        }
                    }
                    try (PreparedStatement ps = c.prepareStatement(sql.renew)) {
                        ps.setLong(1, leaseMs);
                        ps.setString(2, entry.lockName());
                        ps.setString(3, entry.acquisitionId());
                        ps.setLong(4, grant.fencingToken());
                        return ps.executeUpdate();
                    }
                })
                .handle((count, error) -> {
                    if (error != null) {
                        throw new CompletionException(failure(entry.lockName(), "renewal", error));
                    }
                    if (count != 1) {
                        throw new CompletionException(new EntryLostException(
                                entry,
                                "its grant (server token " + grant.fencingToken()
                                        + ") is no longer in the lock table"));
                    }
                    return new Grant(entry, grant.fencingToken(), t0 + leaseNanos - marginNanos);
                });
    }

    @Override
    public CompletionStage<Optional<QueueEntry>> findOwnEntry(String lockName, String acquisitionId) {
        return backend.submit(c -> {
                    try (PreparedStatement ps = c.prepareStatement(sql.findHeld)) {
                        ps.setString(1, lockName);
                        ps.setString(2, acquisitionId);
                        try (ResultSet rs = ps.executeQuery()) {
                            if (rs.next()) {
                                return Optional.of(new QueueEntry(
                                        lockName, acquisitionId, lockName + "#" + acquisitionId, 0, rs.getLong(1)));
                            }
                        }
                    }
                    try (PreparedStatement ps = c.prepareStatement(sql.findEntry)) {
                        ps.setString(1, acquisitionId);
                        try (ResultSet rs = ps.executeQuery()) {
                            if (rs.next()) {
                                return Optional.of(new QueueEntry(
                                        lockName, acquisitionId, rs.getString(1) + "#" + acquisitionId, 0, 0));
                            }
                        }
                    }
                    return Optional.<QueueEntry>empty();
                })
                .handle((found, error) -> {
                    if (error != null) {
                        throw new CompletionException(failure(lockName, "looking up entry " + acquisitionId, error));
                    }
                    return found;
                });
    }

    /** Stops every waiter and deletes this client's waiter rows. */
    CompletableFuture<Void> close() {
        for (Waiter w : waiters.values()) {
            w.cancel();
        }
        waiters.clear();
        synchronized (this) {
            if (pollTimer != null) {
                pollTimer.cancel(false);
            }
        }
        return backend.submit(c -> {
            try (PreparedStatement ps = c.prepareStatement(sql.deleteClientWaiters)) {
                ps.setString(1, backend.clientId);
                ps.executeUpdate();
            }
            return null;
        });
    }

    // ---- helpers

    private long backoffMs(int attempt) {
        long base = Math.max(1, backend.options.retryPolicy().baseSleep().toMillis());
        long max = Math.max(base, backend.options.retryPolicy().maxSleep().toMillis());
        return Math.min(max, base << Math.min(20, Math.max(0, attempt)));
    }

    private RuntimeException failure(String lockName, String what, Throwable error) {
        Throwable cause = error;
        while (cause instanceof CompletionException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        if (cause instanceof LockBackendException
                || cause instanceof EntryLostException
                || cause instanceof IllegalArgumentException
                || cause instanceof UnsupportedOperationException) {
            return (RuntimeException) cause;
        }
        String hint = cause instanceof java.sql.SQLTransientConnectionException
                ? " (no connection could be had from the DataSource in time: is its pool exhausted?)"
                : "";
        return new LockBackendException(
                lockName,
                JdbcBackend.NAME,
                what + " on " + backend.describe() + " failed: " + backend.message(cause) + hint,
                cause);
    }
}
