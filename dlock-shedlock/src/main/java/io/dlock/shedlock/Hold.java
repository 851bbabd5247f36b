package io.dlock.shedlock;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.dlock.Lease;
import java.time.Duration;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One grant handed to ShedLock: the dlock lease of one {@code lock(...)} call, its two deadlines and
 * the timer that releases it. Each {@link SimpleLockHandle} of the grant (the first, then one per
 * successful {@code extend}) drives it.
 *
 * <p>Concurrency: {@code state}, the deadlines, the pending timer and its epoch are guarded by
 * {@code this}; nothing blocking runs under the monitor. The thread that moves the state to {@link
 * State#RELEASED} releases the lease, after leaving the monitor, exactly once. A timer task carries
 * the epoch it was scheduled in and does nothing if an {@code unlock} or {@code extend} has moved the
 * epoch on since (cancelling is best effort).
 *
 * <p>Failure: a release never throws for backend failures (the lease is invalid either way and the
 * engine retries in the background, or the lease runs out). A timer that cannot be scheduled (the
 * provider is closed) releases at once.
 *
 * <p>Invariants: at most one timer is current; {@code RELEASED} is final; the lease is closed once
 * the state is {@code RELEASED} and never while it is {@code RUNNING} or {@code KEPT}, except by the
 * backend (lost).
 */
final class Hold {
    private static final Logger log = LoggerFactory.getLogger(Hold.class);

    /** Where a grant stands. */
    enum State {
        /** The task runs: the lease is held, and released at {@code lockAtMostFor} at the latest. */
        RUNNING,
        /** {@code unlock()} came before {@code lockAtLeastFor} had passed: held until it has. */
        KEPT,
        /** Released: unlocked, {@code lockAtMostFor} passed, the kept time ended, lost, or the provider closed. */
        RELEASED
    }

    private static final Map<State, Set<State>> EDGES = new EnumMap<>(State.class);

    static {
        EDGES.put(State.RUNNING, EnumSet.of(State.KEPT, State.RELEASED));
        EDGES.put(State.KEPT, EnumSet.of(State.RELEASED));
        EDGES.put(State.RELEASED, EnumSet.noneOf(State.class));
    }

    private final Lease lease;
    private final ScheduledExecutorService timers;
    private final Consumer<Hold> onReleased;

    @GuardedBy("this")
    private State state = State.RUNNING;

    /** System.nanoTime() deadlines. */
    @GuardedBy("this")
    private long atMostUntil;

    @GuardedBy("this")
    private long atLeastUntil;

    @GuardedBy("this")
    private long epoch;

    @GuardedBy("this")
    private @Nullable ScheduledFuture<?> timer;

    /** The release in flight or done, once RELEASED; waited for by a caller that finds it RELEASED. */
    @GuardedBy("this")
    private @Nullable CompletionStage<Void> released;

    /** The task has unlocked (or extended away from) every handle: no accessor should find it any more. */
    private volatile boolean taskEnded;

    Hold(Lease lease, ScheduledExecutorService timers, Consumer<Hold> onReleased) {
        this.lease = lease;
        this.timers = timers;
        this.onReleased = onReleased;
    }

    Lease lease() {
        return lease;
    }

    String name() {
        return lease.lockName();
    }

    boolean taskEnded() {
        return taskEnded;
    }

    /**
     * Sets the deadlines, counted from {@code start}, and arms the release at {@code lockAtMostFor};
     * also releases the hold if the backend reports the lease lost.
     */
    void start(long start, Duration lockAtMostFor, Duration lockAtLeastFor) {
        synchronized (this) {
            atMostUntil = start + lockAtMostFor.toNanos();
            atLeastUntil = start + lockAtLeastFor.toNanos();
            arm(atMostUntil, System.nanoTime());
        }
        lease.onLost(e -> {
            log.debug("[lock={} state={}] lease lost: {}", name(), State.RELEASED, e.getMessage());
            release(null, true);
        });
    }

    /**
     * The task ended: keep the lease until {@code lockAtLeastFor} has passed, or release it now.
     * Blocks until the backend confirms a release made here (or one already in flight).
     */
    void unlock() {
        taskEnded = true;
        CompletionStage<Void> pending;
        synchronized (this) {
            long now = System.nanoTime();
            if (state == State.RUNNING && now - atMostUntil < 0 && atLeastUntil - now > 0) {
                transition(State.KEPT);
                arm(atLeastUntil, now);
                log.debug("[lock={} state={}] kept for {} ms", name(), state, (atLeastUntil - now) / 1_000_000);
                return;
            }
            pending = released;
        }
        if (pending == null) {
            release(null, false);
        } else {
            await(pending);
        }
    }

    /**
     * Moves both deadlines to the given durations from now, if the hold still runs and its lease is
     * valid and {@code lockAtMostFor} has not passed. A hold found expired is released here (and the
     * release waited for), so that the lock is free when this returns false.
     */
    boolean extend(Duration lockAtMostFor, Duration lockAtLeastFor) {
        CompletionStage<Void> pending;
        synchronized (this) {
            long now = System.nanoTime();
            if (state == State.RUNNING && now - atMostUntil < 0 && lease.isValid()) {
                atMostUntil = now + lockAtMostFor.toNanos();
                atLeastUntil = now + lockAtLeastFor.toNanos();
                arm(atMostUntil, now);
                log.debug("[lock={} state={}] extended for {}", name(), state, lockAtMostFor);
                return true;
            }
            pending = released;
        }
        taskEnded = true;
        if (pending == null) {
            release(null, false);
        } else {
            await(pending);
        }
        return false;
    }

    /**
     * Releases at once whatever the state (the provider is closing); does not wait for the backend.
     * The task's thread no longer finds the lease.
     */
    void releaseNow() {
        taskEnded = true;
        release(null, true);
    }

    @GuardedBy("this")
    private void arm(long deadline, long now) {
        ScheduledFuture<?> previous = timer;
        if (previous != null) {
            previous.cancel(false);
        }
        long mine = ++epoch;
        try {
            timer = timers.schedule(() -> release(mine, true), Math.max(0, deadline - now), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException e) {
            // The provider is closing: it releases every hold it has (this one too).
            timer = null;
        }
    }

    /**
     * Moves to RELEASED (if {@code expectedEpoch} is null or still current) and releases the lease:
     * without waiting when {@code async}, else until the backend confirms.
     */
    private void release(@Nullable Long expectedEpoch, boolean async) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        State from;
        synchronized (this) {
            if (state == State.RELEASED || (expectedEpoch != null && expectedEpoch != epoch)) {
                return;
            }
            from = state;
            transition(State.RELEASED);
            ScheduledFuture<?> t = timer;
            if (t != null) {
                t.cancel(false);
                timer = null;
            }
            released = done;
        }
        log.debug("[lock={} state={}] released (was {})", name(), State.RELEASED, from);
        try {
            if (async) {
                lease.closeAsync().whenComplete((v, e) -> done.complete(null));
            } else {
                lease.close();
                done.complete(null);
            }
        } catch (RuntimeException e) {
            done.complete(null);
            log.warn(
                    "[lock={} state={}] release failed; the lease ends when the backend expires it: {}",
                    name(),
                    State.RELEASED,
                    e.toString());
        } finally {
            onReleased.accept(this);
        }
    }

    @GuardedBy("this")
    private void transition(State to) {
        Set<State> legal = EDGES.get(state);
        if (legal == null || !legal.contains(to)) {
            throw new IllegalStateException("lock '" + name() + "': " + state + " -> " + to);
        }
        state = to;
    }

    private static void await(CompletionStage<Void> release) {
        // Completes once the release has ended, confirmed or left to the engine's background retry.
        release.toCompletableFuture().join();
    }
}
