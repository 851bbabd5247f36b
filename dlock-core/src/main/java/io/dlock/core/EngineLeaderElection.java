package io.dlock.core;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.dlock.Leader;
import io.dlock.LeaderElection;
import io.dlock.Lease;
import io.dlock.LockLostException;
import io.dlock.RetryPolicy;
import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockKind;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockSnapshot;
import java.time.Duration;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One candidate of a leader election: the engine's exclusive lock on {@value #PREFIX}{@code name},
 * acquired with an ownerless, untimed {@code acquireAsync}, held as a term, and acquired again
 * (at the back of the queue) when the term ends.
 *
 * <p>Design: a candidate stands in the backend's queue once, as any waiter of the lock does (FIFO
 * and a single wake-up where the backend queues; Memcached polls), so no thread is parked per
 * candidate. The grant is the term; its fencing token is the term number. A term ends by loss (the
 * lease's {@code onLost}), by the user closing it ({@link Term#close()}), or by {@link #close()}.
 * After the first two the candidate cleans up the old entry and queues again; after the last it
 * stops. A backend failure while queued (the acquisition fails) waits the client's {@link
 * RetryPolicy} back-off, doubling up to its {@code maxSleep}, and queues again, for as long as the
 * election is open.
 *
 * <p>Concurrency: {@link #lock} guards the state, the current term and the pending acquisition; no
 * engine call and no user code runs while it is held. Listener calls are queued as events (in the
 * order of the transitions that made them, while {@link #lock} is held) and drained by one thread at
 * a time on the client's listener executor, so one election never runs two listeners at once and
 * a term's {@code onRevoked} always runs after its {@code onElected} and before the next.
 *
 * <p>Failure: every way out of QUEUED other than a grant either backs off and queues again or, once
 * closed, leaves nothing: a pending acquisition is cancelled (the engine withdraws its entry), a
 * grant that races with the close is released.
 *
 * <p>Invariants: at most one pending acquisition and at most one term per candidate; each term's
 * {@code onRevoked} events are queued exactly once ({@link #termEnded} is the only place, guarded
 * by {@code term == t}); after CLOSED nothing is queued again.
 */
final class EngineLeaderElection implements LeaderElection {
    private static final Logger log = LoggerFactory.getLogger(EngineLeaderElection.class);

    /** The namespace of election locks: the lock of election {@code x} is {@code election:x}. */
    static final String PREFIX = LockNames.ELECTION_PREFIX;
    /**
     * On a backend without a queue ({@link io.dlock.Capability#FAIR} absent: Memcached, unfair Redis
     * or SQL), how long a candidate that gave up its term waits before it competes again, so that a
     * waiting candidate (which polls, or races on a wake-up) is elected instead of the one that just
     * gave up. Longer than any backend's longest poll interval (Memcached's is at most 200 ms).
     */
    static final Duration UNFAIR_REJOIN_PAUSE = Duration.ofSeconds(1);

    /** The longest election name whose lock name is still a valid lock name. */
    static final int MAX_NAME_LENGTH = LockNames.MAX_LENGTH - PREFIX.length();

    /** The life of one candidate. */
    enum State {
        /** Created, not started: nothing sent. */
        IDLE,
        /** Waiting for a term: an acquisition stands in the lock's queue (or is being sent). */
        QUEUED,
        /** Holding a term. */
        LEADING,
        /** The term ended (lost or given up): the old entry is cleaned up before queueing again. */
        ENDING,
        /** The last attempt to queue failed: waiting the retry back-off before queueing again. */
        BACKING_OFF,
        /** Closed, by the user or with the client; terminal. */
        CLOSED;

        private static final Map<State, Set<State>> LEGAL = new EnumMap<>(State.class);

        static {
            LEGAL.put(IDLE, EnumSet.of(QUEUED, CLOSED));
            LEGAL.put(QUEUED, EnumSet.of(LEADING, BACKING_OFF, CLOSED));
            LEGAL.put(LEADING, EnumSet.of(ENDING, CLOSED));
            LEGAL.put(ENDING, EnumSet.of(QUEUED, CLOSED));
            LEGAL.put(BACKING_OFF, EnumSet.of(QUEUED, CLOSED));
            LEGAL.put(CLOSED, EnumSet.noneOf(State.class));
        }

        boolean canMoveTo(State next) {
            return Objects.requireNonNull(LEGAL.get(this)).contains(next);
        }
    }

    private final EngineClient client;
    private final String name;
    private final String lockName;
    private final List<Consumer<Lease>> electedListeners = new CopyOnWriteArrayList<>();
    private final List<Consumer<Lease>> revokedListeners = new CopyOnWriteArrayList<>();

    private final Object lock = new Object();

    @GuardedBy("lock")
    private State state = State.IDLE;

    @GuardedBy("lock")
    private @Nullable Term term;

    @GuardedBy("lock")
    private @Nullable CompletableFuture<Lease> pending;

    @GuardedBy("lock")
    private @Nullable Acquisition queued;

    @GuardedBy("lock")
    private @Nullable ScheduledFuture<?> retry;
    /** Consecutive failed attempts to queue; 0 after a grant. */
    @GuardedBy("lock")
    private int failures;

    /** Listener calls in order; drained by one thread at a time ({@link #draining}). */
    private final ConcurrentLinkedQueue<Runnable> events = new ConcurrentLinkedQueue<>();

    private final AtomicInteger draining = new AtomicInteger();

    EngineLeaderElection(EngineClient client, String name) {
        this.client = client;
        this.name = validate(name);
        this.lockName = PREFIX + name;
    }

    static String validate(String name) {
        LockNames.validate(name);
        if (name.length() > MAX_NAME_LENGTH) {
            throw new IllegalArgumentException("election name is " + name.length()
                    + " characters long; at most " + MAX_NAME_LENGTH + " are allowed (its lock is '" + PREFIX
                    + "' + name)");
        }
        return name;
    }

    @Override
    public String name() {
        return name;
    }

    /** The lock name of this election's terms. */
    String lockName() {
        return lockName;
    }

    @Override
    public LeaderElection onElected(Consumer<Lease> listener) {
        electedListeners.add(checkListener(listener));
        return this;
    }

    @Override
    public LeaderElection onRevoked(Consumer<Lease> listener) {
        revokedListeners.add(checkListener(listener));
        return this;
    }

    private Consumer<Lease> checkListener(@Nullable Consumer<Lease> listener) {
        if (listener == null) {
            throw new IllegalArgumentException(
                    "election '" + name + "' on " + client.backendName + ": listener must not be null");
        }
        return listener;
    }

    @Override
    public LeaderElection start() {
        synchronized (lock) {
            if (state == State.CLOSED) {
                throw new IllegalStateException(
                        "election '" + name + "' on " + client.backendName + " is closed; make a new one");
            }
            if (state != State.IDLE) {
                return this;
            }
            if (!client.isOpen()) {
                throw new IllegalStateException(client.backendName + " client is closed");
            }
            transition(State.IDLE, State.QUEUED);
        }
        client.elections.add(this);
        client.metrics.electionStarted(this);
        enqueue();
        return this;
    }

    @Override
    public Optional<Lease> leadership() {
        synchronized (lock) {
            return currentTerm();
        }
    }

    @GuardedBy("lock")
    private Optional<Lease> currentTerm() {
        Term t = term;
        return t != null && t.isValid() ? Optional.of(t) : Optional.empty();
    }

    /** The low bits of a lease's token that JVM-local hand-offs add to the server's number. */
    private static final long LOCAL_STEPS = (1L << 10) - 1;

    @Override
    public Optional<Leader> currentLeader() {
        LockInspector inspector = client.inspector()
                .orElseThrow(() -> new UnsupportedOperationException(client.backendName
                        + " offers no way to read its locks: cannot tell who leads election '" + name + "'"));
        Optional<Lease> mine = leadership();
        for (LockSnapshot lock : inspector.inspect(lockName)) {
            if (!lock.name().equals(lockName) || lock.kind() != LockKind.EXCLUSIVE) {
                continue; // a longer name with this one as its prefix
            }
            for (EntrySnapshot holder : lock.holders()) {
                boolean self = mine.isPresent() && (mine.get().fencingToken() & ~LOCAL_STEPS) == holder.leaseToken();
                return Optional.of(new Leader(
                        name,
                        self ? mine.get().fencingToken() : holder.leaseToken(),
                        holder.clientId(),
                        holder.host(),
                        holder.pid(),
                        holder.since(),
                        self));
            }
        }
        return Optional.empty();
    }

    @Override
    public Optional<Lease> awaitLeadership(Duration wait) throws InterruptedException {
        if (wait == null || wait.isNegative()) {
            throw new IllegalArgumentException("election '" + name + "': wait must not be null or negative: " + wait);
        }
        long deadline = System.nanoTime() + EngineLock.saturatedNanos(wait);
        synchronized (lock) {
            while (true) {
                Optional<Lease> now = currentTerm();
                if (now.isPresent() || state == State.CLOSED) {
                    return now;
                }
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return Optional.empty();
                }
                // A loss makes the term invalid before termEnded notifies: look again now and then.
                TimeUnit.NANOSECONDS.timedWait(lock, Math.min(left, TimeUnit.MILLISECONDS.toNanos(50)));
            }
        }
    }

    @Override
    public void close() {
        close(true);
    }

    /**
     * Closes the election. {@code waitForBackend} false (the client's own close, which waits for every
     * release itself): the withdrawal and the release are started, not awaited.
     */
    void close(boolean waitForBackend) {
        Term t;
        CompletableFuture<Lease> p;
        Acquisition q;
        ScheduledFuture<?> r;
        synchronized (lock) {
            if (state == State.CLOSED) {
                return;
            }
            transition(state, State.CLOSED);
            t = term;
            term = null;
            p = pending;
            pending = null;
            q = queued;
            queued = null;
            r = retry;
            retry = null;
            if (t != null) {
                t.ended.set(true);
                Term ended = t;
                events.add(() -> fire(revokedListeners, ended, "onRevoked"));
            }
            lock.notifyAll();
        }
        client.elections.remove(this);
        if (t != null) {
            client.metrics.termEnded(this, LockMetrics.TermEnd.CLOSED, System.nanoTime() - t.began);
        }
        client.metrics.electionClosed(this);
        if (r != null) {
            r.cancel(false);
        }
        if (p != null && q != null) {
            p.cancel(false); // the engine withdraws the entry, or releases a grant that raced
            if (waitForBackend) {
                awaitQuietly(q.outcome());
                awaitRaceReleased(q);
            }
        }
        if (t != null) {
            if (waitForBackend) {
                t.lease.close(); // until released or the connect timeout; never throws for the backend
            } else {
                CompletableFuture<?> unused = t.lease.closeAsync().toCompletableFuture();
            }
        }
        drain();
    }

    // ---- queueing

    private void enqueue() {
        Acquisition a;
        CompletableFuture<Lease> f;
        try {
            a = client.newAcquisition(lockName, LockMode.EXCLUSIVE, 1, 1, null, false, null);
            f = EngineLock.startAsync(client, a);
        } catch (RuntimeException e) {
            failed(null, e);
            return;
        }
        boolean keep;
        synchronized (lock) {
            keep = state == State.QUEUED && pending == null;
            if (keep) {
                pending = f;
                queued = a;
            }
        }
        if (!keep) {
            f.cancel(false); // closed meanwhile
            return;
        }
        CompletableFuture<?> unused = f.whenComplete((lease, error) -> {
            if (error != null) {
                failed(f, error);
            } else {
                granted(f, lease);
            }
        });
    }

    private void granted(CompletableFuture<Lease> f, Lease lease) {
        Term t = null;
        boolean recovered = false;
        synchronized (lock) {
            if (pending == f && state == State.QUEUED) {
                pending = null;
                queued = null;
                recovered = failures > 0;
                failures = 0;
                t = new Term(lease);
                term = t;
                transition(State.QUEUED, State.LEADING);
                Term elected = t;
                events.add(() -> fire(electedListeners, elected, "onElected"));
                lock.notifyAll();
            }
        }
        if (t == null) {
            CompletableFuture<?> unused = lease.closeAsync().toCompletableFuture(); // closed meanwhile: give it back
            return;
        }
        if (recovered) {
            log.warn("[lock={} state=LEADING] election '{}' reached the backend again and was elected", lockName, name);
        }
        log.debug("[lock={} state=LEADING] term {} begins", lockName, lease.fencingToken());
        client.metrics.termBegan(this);
        drain();
        Term elected = t;
        lease.onLost(e -> lost(elected, e));
    }

    private void failed(@Nullable CompletableFuture<Lease> f, Throwable error) {
        Throwable cause = Acquisition.unwrap(error);
        long delayNanos;
        int failure;
        synchronized (lock) {
            if (f != null && pending != f) {
                return; // abandoned by close
            }
            pending = null;
            queued = null;
            if (state != State.QUEUED) {
                return;
            }
            if (!client.isOpen()) {
                transition(State.QUEUED, State.CLOSED);
                lock.notifyAll();
                return;
            }
            transition(State.QUEUED, State.BACKING_OFF);
            failure = ++failures;
            delayNanos = backoffNanos(client.options.retryPolicy(), failure);
            try {
                retry = client.schedule(this::retry, delayNanos);
            } catch (RejectedExecutionException e) {
                transition(State.BACKING_OFF, State.CLOSED); // the client is closing
                lock.notifyAll();
                return;
            }
        }
        if (failure == 1) {
            log.warn(
                    "[lock={} state=BACKING_OFF] election '{}' could not queue for a term ({}); retrying with"
                            + " back-off until the backend answers",
                    lockName,
                    name,
                    cause.toString());
        } else {
            log.debug(
                    "[lock={} state=BACKING_OFF] attempt {} failed ({}); next in {} ms",
                    lockName,
                    failure,
                    cause.toString(),
                    TimeUnit.NANOSECONDS.toMillis(delayNanos));
        }
    }

    /** The back-off before attempt {@code failure + 1}: base, doubled per failure, capped at max. */
    static long backoffNanos(RetryPolicy policy, int failure) {
        long base = policy.baseSleep().toNanos();
        long max = policy.maxSleep().toNanos();
        int shift = Math.min(failure - 1, 30);
        long delay = base << shift;
        return delay <= 0 || delay > max || (delay >> shift) != base ? max : delay;
    }

    private void retry() {
        synchronized (lock) {
            if (state != State.BACKING_OFF) {
                return;
            }
            retry = null;
            transition(State.BACKING_OFF, State.QUEUED);
        }
        enqueue();
    }

    // ---- the end of a term

    private void lost(Term t, LockLostException why) {
        if (!termEnded(t, LockMetrics.TermEnd.LOST)) {
            return;
        }
        log.debug("[lock={} state=ENDING] term {} lost: {}", lockName, t.fencingToken(), why.getMessage());
        // The entry may still be on the server (a suspension the session survived): remove it first,
        // so that this candidate does not queue behind its own old entry.
        CompletableFuture<?> unused = t.lease.closeAsync().toCompletableFuture().whenComplete((x, e) -> rejoin());
    }

    /**
     * The user closed the term: it was released; queue again at the back (after a pause where the
     * backend has no queue, see {@link #UNFAIR_REJOIN_PAUSE}).
     */
    private void givenUp(Term t) {
        if (!termEnded(t, LockMetrics.TermEnd.GIVEN_UP)) {
            return;
        }
        log.debug("[lock={} state=ENDING] term {} given up", lockName, t.fencingToken());
        if (client.capabilities().contains(io.dlock.Capability.FAIR)) {
            rejoin();
            return;
        }
        try {
            ScheduledFuture<?> unused = client.schedule(this::rejoin, UNFAIR_REJOIN_PAUSE.toNanos());
        } catch (RejectedExecutionException e) {
            // the client is closing: nothing to rejoin
        }
    }

    /** Ends {@code t} if it is the current term: queues its onRevoked, records how. False if it had ended already. */
    private boolean termEnded(Term t, LockMetrics.TermEnd how) {
        synchronized (lock) {
            if (term != t) {
                return false;
            }
            term = null;
            t.ended.set(true);
            transition(State.LEADING, State.ENDING);
            events.add(() -> fire(revokedListeners, t, "onRevoked"));
            lock.notifyAll();
        }
        client.metrics.termEnded(this, how, System.nanoTime() - t.began);
        drain();
        return true;
    }

    /** The {@code dlock.leader} gauge: 1 while this candidate holds a valid term. */
    double leadingGauge() {
        return leadership().isPresent() ? 1 : 0;
    }

    private void rejoin() {
        synchronized (lock) {
            if (state != State.ENDING) {
                return; // closed meanwhile
            }
            transition(State.ENDING, State.QUEUED);
        }
        enqueue();
    }

    // ---- listeners

    /**
     * Runs queued events on the listener executor, one drainer at a time: whoever moves the counter
     * from 0 submits a drain; a drain runs until it has seen every event queued before its last check.
     */
    private void drain() {
        if (draining.getAndIncrement() != 0) {
            return;
        }
        try {
            client.listeners.execute(this::runEvents);
        } catch (RejectedExecutionException e) {
            runEvents();
        }
    }

    private void runEvents() {
        int seen = draining.get();
        while (true) {
            Runnable event;
            while ((event = events.poll()) != null) {
                event.run();
            }
            int now = draining.addAndGet(-seen);
            if (now == 0) {
                return;
            }
            seen = now;
        }
    }

    private void fire(List<Consumer<Lease>> listeners, Term t, String kind) {
        for (Consumer<Lease> l : listeners) {
            try {
                l.accept(t);
            } catch (Throwable e) { // even an Error: no listener stops the others or the election
                log.warn(
                        "[lock={} state={}] {} listener of election '{}' threw",
                        lockName,
                        stateForLog(),
                        kind,
                        name,
                        e);
            }
        }
    }

    private State stateForLog() {
        synchronized (lock) {
            return state;
        }
    }

    @GuardedBy("lock")
    private void transition(State from, State to) {
        if (state != from || !from.canMoveTo(to)) {
            throw new IllegalStateException(
                    "election '" + name + "': " + state + " -> " + to + " (expected " + from + ")");
        }
        state = to;
        log.debug("[lock={} state={}] {} -> {}", lockName, to, from, to);
    }

    /**
     * A grant that raced with the close is released by the engine on a callback thread: release it
     * here too (whoever comes first sends it) and wait, up to the connect timeout, until it is gone,
     * so that close() returns with nothing of this candidate left on the backend.
     */
    private void awaitRaceReleased(Acquisition q) {
        LockState s = q.state();
        if (s != LockState.HELD && s != LockState.RELEASING) {
            return;
        }
        awaitQuietly(q.release());
        long deadline = System.nanoTime() + client.options.connectTimeout().toNanos();
        while (q.state() == LockState.RELEASING && System.nanoTime() < deadline) {
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Waits for {@code f} up to the client's connect timeout; its outcome does not matter. */
    private void awaitQuietly(CompletableFuture<?> f) {
        boolean interrupted = Thread.interrupted();
        try {
            f.get(client.options.connectTimeout().toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            interrupted = true;
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            // withdrawn (the usual outcome of a cancel), or left to the engine's background retry
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public String toString() {
        return "LeaderElection[" + name + " on " + client.backendName + ", " + stateForLog() + "]";
    }

    /**
     * A term: the lease of the election's lock, owned by no thread. Closing it gives the term up; the
     * candidate then queues again. Invalid as soon as the term has ended for the election (so that an
     * {@code onRevoked} listener never sees it valid).
     */
    final class Term implements Lease {
        final Lease lease;
        final AtomicBoolean ended = new AtomicBoolean();
        /** When the term began (System.nanoTime()), for its duration in the metrics. */
        final long began = System.nanoTime();

        private final AtomicBoolean closed = new AtomicBoolean();

        Term(Lease lease) {
            this.lease = lease;
        }

        @Override
        public String lockName() {
            return lease.lockName();
        }

        @Override
        public long fencingToken() {
            return lease.fencingToken();
        }

        @Override
        public boolean isValid() {
            return !ended.get() && !closed.get() && lease.isValid();
        }

        @Override
        public void checkValid() {
            lease.checkValid();
            if (!isValid()) {
                throw new LockLostException(
                        lease.lockName(),
                        client.backendName,
                        "term " + lease.fencingToken() + " of election '" + name + "' has ended",
                        null);
            }
        }

        @Override
        public Lease onLost(Consumer<LockLostException> listener) {
            lease.onLost(listener);
            return this;
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                lease.close();
                givenUp(this);
            }
        }

        @Override
        public String toString() {
            return "Term[election=" + name + ", number=" + lease.fencingToken() + ", valid=" + isValid() + "]";
        }
    }
}
