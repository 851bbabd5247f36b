package io.dlock.jdbc;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayDeque;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Predicate;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The doorbell of MariaDB and MySQL, which have no {@code NOTIFY}: a fair hand-off between clients
 * wakes the next waiter in about a round trip, instead of at that waiter's next poll.
 *
 * <p>Design (Curator's "wait on the predecessor only", with {@code GET_LOCK} as the watch): every
 * waiting exclusive acquisition of this client gets a <em>bell</em>, a connection of its own that
 * holds the user lock {@code dlock-bell:<acquisition>} from before its waiter row is written until
 * the acquisition ends (released, withdrawn, or its session gone). The same connection then blocks
 * in {@code GET_LOCK} on the bell of its predecessor: the live waiter just ahead of it in the queue,
 * or the owner if it stands first. When that acquisition ends, its bell connection releases its
 * bell and the server returns exactly that one blocked {@code GET_LOCK}: the waiter behind it tries
 * the grant at once. Nobody else wakes (no herd), and the grant statement decides as before (queue
 * order, tokens, expiry): the bell only says when to try. A waiter granted this way keeps its bell
 * while it holds the lock, so the chain goes on from holder to holder.
 *
 * <p>Costs: an acquisition granted at its first try gets no bell, so the uncontended cycle sends
 * nothing more; its successor finds no bell in use ({@code IS_USED_LOCK}) and waits for its poll,
 * as before, and only that first hand-off of a busy period is slow. A waiter costs one connection
 * and one thread while it waits and holds, at most {@code maxConnections} of them per client (with
 * JVM-local queueing one per lock); a waiter beyond that polls. The blocking {@code GET_LOCK} names
 * no table, so it holds no metadata lock that could stall DDL.
 *
 * <p>Failure: the poll stays the backstop for everything the bell misses (a predecessor without a
 * bell, a bell connection that failed, a killed session, a wake-up lost in transit): polling is
 * what the doorbell degrades to. A bell connection that fails is closed and no new bell is opened
 * for {@value #BACKOFF_MS} ms. A crashed predecessor's session ends, which releases its bell: its
 * successor tries (and fails until the lease runs out, which the poll then catches).
 *
 * <p>Concurrency: every statement of a bell runs on that bell's own single thread, in order;
 * callers only enqueue work and never block. {@link #assigned} maps an acquisition to its bell.
 * A bell's generation changes when its acquisition ends, so that work queued for an earlier
 * acquisition does nothing.
 */
final class MariaDbDoorbell {
    private static final Logger log = LoggerFactory.getLogger(MariaDbDoorbell.class);

    /** How long one blocking {@code GET_LOCK} lasts before the waiter looks up its predecessor again. */
    static final int WAIT_SECONDS = 1;

    /** No new bell for this long after a bell connection failed. */
    static final long BACKOFF_MS = 5_000;

    static final String PREFIX = "dlock-bell:";

    /** MariaDB's and MySQL's limit on a user lock's name. */
    static final int MAX_NAME = 64;

    private final JdbcBackend backend;
    private final String predecessorSql;
    private final int maxBells;
    private final Map<String, Bell> assigned = new ConcurrentHashMap<>();

    @GuardedBy("this")
    private final ArrayDeque<Bell> idle = new ArrayDeque<>();

    @GuardedBy("this")
    private int open;

    @GuardedBy("this")
    private boolean closed;

    private volatile long failedAtNanos;
    private volatile boolean failedOnce;
    private final AtomicInteger threads = new AtomicInteger();

    MariaDbDoorbell(JdbcBackend backend, JdbcStatements sql, int maxBells) {
        this.backend = backend;
        this.predecessorSql = java.util.Objects.requireNonNull(sql.bellPredecessor);
        this.maxBells = maxBells;
    }

    static String bellName(String acquisition) {
        return PREFIX + acquisition;
    }

    /**
     * The bell of {@code acquisition}, armed (its user lock taken) or being armed; its existing one
     * if it has one (an acquisition queued again after a presumed loss). Never blocks.
     *
     * @param live which acquisitions may keep a bell (waiting or holding): used to take back the
     *     bells of acquisitions that ended without a release, when all are in use
     * @return null when no bell can be had (all in use, a recent failure, closed): the waiter polls
     */
    @Nullable
    Bell bell(String acquisition, Predicate<String> live) {
        Bell b = assigned.get(acquisition);
        if (b != null) {
            return b;
        }
        if (bellName(acquisition).length() > MAX_NAME
                || (failedOnce && System.nanoTime() - failedAtNanos < TimeUnit.MILLISECONDS.toNanos(BACKOFF_MS))) {
            return null;
        }
        b = take();
        if (b == null) {
            for (Map.Entry<String, Bell> e : assigned.entrySet()) {
                if (!live.test(e.getKey())) {
                    ring(e.getKey());
                }
            }
            return null; // this waiter polls; the next one may find a bell free
        }
        b.assign(acquisition);
        assigned.put(acquisition, b);
        return b;
    }

    /** The bell {@code acquisition} has, or null. */
    @Nullable
    Bell assigned(String acquisition) {
        return assigned.get(acquisition);
    }

    /**
     * Ends {@code acquisition}'s bell (after its release or withdrawal has been sent): its user
     * lock is released, which wakes the waiter behind it, and the bell is kept for another
     * acquisition. Never blocks; does nothing for an acquisition without a bell.
     */
    void ring(String acquisition) {
        Bell b = assigned.remove(acquisition);
        if (b != null) {
            b.end(acquisition);
        }
    }

    /** Whether {@code acquisition}'s bell is blocked on a predecessor's bell that is in use. */
    boolean listening(String acquisition) {
        Bell b = assigned.get(acquisition);
        return b != null && b.blocked;
    }

    private synchronized @Nullable Bell take() {
        if (closed) {
            return null;
        }
        Bell b = idle.poll();
        if (b == null && open < maxBells) {
            open++;
            b = new Bell();
        }
        return b;
    }

    private synchronized void giveBack(Bell b) {
        if (closed) {
            b.shutdown();
        } else {
            idle.push(b);
        }
    }

    private synchronized void discard(Bell b) {
        open--;
        b.shutdown();
    }

    private void failed(String what, Throwable e) {
        failedAtNanos = System.nanoTime();
        failedOnce = true;
        log.debug("[client={}] doorbell: {} failed, polling instead: {}", JdbcBackend.NAME, what, backend.message(e));
    }

    /** Closes every bell connection; a blocked {@code GET_LOCK} is cut off with its connection. */
    void close() {
        java.util.List<Bell> all;
        synchronized (this) {
            closed = true;
            all = new java.util.ArrayList<>(idle);
            idle.clear();
        }
        all.addAll(assigned.values());
        assigned.clear();
        for (Bell b : all) {
            b.shutdown();
        }
    }

    /**
     * One bell: a dedicated connection and the single thread that runs its statements. Assigned to
     * one acquisition at a time.
     */
    final class Bell {
        private final ThreadPoolExecutor thread;

        /** Used by the bell's thread only (and by shutdown, which aborts it). */
        private volatile @Nullable Connection connection;

        /** The acquisition it is assigned to; null while idle. */
        @GuardedBy("this")
        private @Nullable String acquisition;

        /** Bumped when the assignment ends: queued work of an earlier assignment does nothing. */
        @GuardedBy("this")
        private long generation;

        /** Whether its own user lock is held (the bell's thread only). */
        private boolean armed;

        @GuardedBy("this")
        private boolean loopQueued;

        @GuardedBy("this")
        private boolean again;

        @GuardedBy("this")
        private @Nullable String lockName;

        @GuardedBy("this")
        private long seq;

        @GuardedBy("this")
        private @Nullable Consumer<Connection> onRing;

        @GuardedBy("this")
        private @Nullable BooleanSupplier waiting;

        /** Whether the thread is blocked in GET_LOCK on a bell that was in use. */
        volatile boolean blocked;

        /** Completes once its own user lock is held (or that failed): the waiter row may be written then. */
        @GuardedBy("this")
        private CompletableFuture<Void> armedFuture = CompletableFuture.completedFuture(null);

        Bell() {
            this.thread = new ThreadPoolExecutor(1, 1, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
                Thread t = new Thread(r, "dlock-jdbc-bell-" + threads.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
            this.thread.allowCoreThreadTimeOut(true);
        }

        private void assign(String acq) {
            long gen;
            CompletableFuture<Void> armedNow = new CompletableFuture<>();
            synchronized (this) {
                acquisition = acq;
                gen = ++generation;
                armedFuture = armedNow;
                lockName = null;
                onRing = null;
                waiting = null;
            }
            run(
                    gen,
                    () -> {
                        try (PreparedStatement ps = connection().prepareStatement("SELECT GET_LOCK(?, 0)")) {
                            ps.setString(1, bellName(acq));
                            try (ResultSet rs = ps.executeQuery()) {
                                armed = rs.next() && rs.getInt(1) == 1;
                            }
                        }
                    },
                    () -> armedNow.complete(null));
            if (connection == null) {
                // A new bell opens its connection first, which a pool that has none free may make a
                // long wait: the waiter goes on meanwhile (a successor that comes before the bell is
                // armed finds it unused, and polls).
                armedNow.complete(null);
            }
        }

        /** Completes once the bell's own user lock is taken, or that failed; never exceptionally. */
        synchronized CompletableFuture<Void> armed() {
            return armedFuture;
        }

        /**
         * Watches the waiter's predecessor: runs {@code ring} (a grant attempt, on the bell's
         * connection, which it is given) on the bell's thread when the predecessor's bell is
         * released, or at once if nobody is ahead. Called again after each
         * failed grant attempt; a watch in progress looks its predecessor up once more when it
         * returns. Never blocks.
         *
         * @param stillWaiting false once the acquisition stopped waiting: the watch ends
         */
        void watch(String name, long waiterSeq, Consumer<Connection> ring, BooleanSupplier stillWaiting) {
            long gen;
            synchronized (this) {
                lockName = name;
                seq = waiterSeq;
                onRing = ring;
                waiting = stillWaiting;
                if (loopQueued) {
                    again = true;
                    return;
                }
                loopQueued = true;
                gen = generation;
            }
            run(gen, () -> listen(gen), () -> {});
        }

        private void listen(long gen) throws SQLException {
            while (true) {
                String name;
                long s;
                Consumer<Connection> ring;
                synchronized (this) {
                    again = false;
                    BooleanSupplier w = waiting;
                    if (gen != generation || !armed || w == null || !w.getAsBoolean()) {
                        loopQueued = false;
                        return;
                    }
                    name = java.util.Objects.requireNonNull(lockName);
                    s = seq;
                    ring = java.util.Objects.requireNonNull(onRing);
                }
                if (!listenOnce(name, s, ring)) {
                    synchronized (this) {
                        if (!again) {
                            loopQueued = false;
                            return;
                        }
                    }
                }
            }
        }

        /** One look-up and wait; true to look again (the wait timed out). */
        private boolean listenOnce(String name, long s, Consumer<Connection> ring) throws SQLException {
            Connection c = connection();
            String predecessor;
            boolean inUse;
            try (PreparedStatement ps = c.prepareStatement(predecessorSql)) {
                ps.setString(1, name);
                ps.setLong(2, s);
                ps.setString(3, name);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    predecessor = rs.getString(1);
                    rs.getLong(2);
                    inUse = !rs.wasNull();
                }
            }
            if (predecessor == null) {
                ring.accept(c); // nobody ahead and the lock free (or its lease run out): try now
                return false;
            }
            if (!inUse || bellName(predecessor).length() > MAX_NAME) {
                return false; // a predecessor without a bell: the poll decides
            }
            int got;
            blocked = true;
            try (PreparedStatement ps = c.prepareStatement("SELECT GET_LOCK(?, " + WAIT_SECONDS + ")")) {
                ps.setString(1, bellName(predecessor));
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    got = rs.getInt(1);
                    if (rs.wasNull()) {
                        throw new SQLException("GET_LOCK returned NULL (killed, or out of memory)");
                    }
                }
            } finally {
                blocked = false;
            }
            if (got != 1) {
                return true; // still held: look again (the predecessor may have changed meanwhile)
            }
            ring.accept(c); // the grant attempt, on this connection: no hop to a worker
            try (PreparedStatement ps = c.prepareStatement("DO RELEASE_LOCK(?)")) {
                ps.setString(1, bellName(predecessor));
                ps.execute();
            }
            return false;
        }

        /** Ends the assignment: releases its own user lock, then waits idle for the next. */
        private void end(String acq) {
            long gen;
            synchronized (this) {
                if (!acq.equals(acquisition)) {
                    return;
                }
                acquisition = null;
                gen = ++generation;
                waiting = null;
                onRing = null;
            }
            run(
                    gen,
                    () -> {
                        if (armed) {
                            try (PreparedStatement ps = connection().prepareStatement("DO RELEASE_LOCK(?)")) {
                                ps.setString(1, bellName(acq));
                                ps.execute();
                            }
                            armed = false;
                        }
                        giveBack(this);
                    },
                    () -> {});
        }

        private Connection connection() throws SQLException {
            Connection c = connection;
            if (c == null) {
                c = backend.dedicatedConnection();
                connection = c;
            }
            return c;
        }

        /**
         * Runs {@code work} on the bell's thread if its assignment is still {@code gen}; a failure
         * ends the bell. {@code always} runs afterwards, also when the work was skipped or refused.
         */
        private void run(long gen, SqlWork work, Runnable always) {
            try {
                thread.execute(() -> {
                    try {
                        synchronized (this) {
                            if (gen != generation) {
                                loopQueued = false;
                                return;
                            }
                        }
                        work.run();
                    } catch (SQLException | RuntimeException e) {
                        failed("bell statement", e);
                        String acq;
                        synchronized (this) {
                            loopQueued = false;
                            acq = acquisition;
                            ++generation;
                        }
                        if (acq != null) {
                            assigned.remove(acq, this);
                        }
                        discard(this);
                    } finally {
                        always.run();
                    }
                });
            } catch (RejectedExecutionException e) {
                always.run(); // shut down: the waiter polls
            }
        }

        private void shutdown() {
            thread.shutdownNow();
            Connection c = connection;
            connection = null;
            if (c != null) {
                // A GET_LOCK may be blocked on it: closing from here would wait for the driver's lock.
                try {
                    c.abort(task -> {
                        Thread t = new Thread(task, "dlock-jdbc-bell-abort");
                        t.setDaemon(true);
                        t.start();
                    });
                } catch (SQLException | RuntimeException e) {
                    backend.closeDedicated(c);
                }
            }
        }
    }

    @FunctionalInterface
    private interface SqlWork {
        void run() throws SQLException;
    }
}
