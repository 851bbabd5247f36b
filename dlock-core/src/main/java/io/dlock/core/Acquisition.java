package io.dlock.core;

import io.dlock.LockBackendException;
import io.dlock.LockLostException;
import io.dlock.LockTimeoutException;
import io.dlock.spi.EntryLostException;
import io.dlock.spi.Grant;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockRequest;
import io.dlock.spi.Position;
import io.dlock.spi.QueueEntry;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One request for a lock, from enqueue to release: the state machine of {@link LockState} and the
 * wait loop that drives the backend's {@link io.dlock.spi.LockProtocol}.
 *
 * <p>Concurrency: the state moves only through {@link #transition}, a CAS on a legal edge. The
 * backend's callback thread, the timer thread, the caller's thread and the client's close race to
 * move it; the first CAS wins and the losers clean up after it. Listeners and logging run after a
 * successful CAS. No thread blocks while holding a monitor.
 *
 * <p>Failure: any way out other than a grant (timeout, interrupt, cancel, backend failure, client
 * close) withdraws the entry before {@link #outcome} completes, so a caller that sees the failure
 * finds no entry left on the backend. An entry whose enqueue reply never came is looked up by the
 * acquisition id and removed.
 *
 * <p>Invariants: {@code holds > 0} only in HELD or LOST; each entry is withdrawn (or cleaned up
 * after a loss) at most once, guarded per entry by {@code withdrawn}; each lost listener runs at most once.
 */
final class Acquisition {
    private static final Logger log = LoggerFactory.getLogger(Acquisition.class);

    final EngineClient client;
    final String name;
    final LockMode mode;
    final String id;
    /** The acquiring thread for blocking acquisitions; null when the lease owns itself. */
    final @Nullable Thread owner;
    /** Whether the owner thread may re-enter, and only it may close the lease. */
    final boolean reentrant;
    /**
     * Fields a plain held lock does not need (a timed wait's deadline and timer, a semaphore's
     * permits, a cancel's or loss's cause, onLost listeners, downgrades, a renewal failure, a
     * withdrawal's guard, a local queue), in an object made on first use, or at construction for a
     * timed acquisition or a semaphore, so that a plain held lock does not pay for them (W4).
     * Installed once by a CAS on {@link #rare} (or in the constructor); its fields are volatile and
     * keep the CAS discipline they had as fields of this class.
     */
    static final class Rare {
        /** For a read acquired under the same thread's write lock (a downgrade): that write acquisition. */
        volatile @Nullable Acquisition downgradeOf;
        /** How many downgraded reads were taken under this write grant; each gets its own token. */
        volatile int downgrades;

        volatile @Nullable Throwable cancelCause;
        volatile @Nullable LockLostException lostCause;
        volatile @Nullable ScheduledFuture<?> timer;
        volatile boolean deadlineArmed;
        /** Why the last renewal failed, reported as the cause if the lease runs out. */
        volatile @Nullable Throwable lastRenewalFailure;
        /** Created on the first {@code onLost} registration. */
        volatile @Nullable Queue<Consumer<LockLostException>> lostListeners;
        /** A timed acquisition's wait (for its timeout's message); set at construction. */
        volatile @Nullable Duration wait;
        /** A timed acquisition's deadline ({@link EngineClient#ticker}); set at construction. */
        volatile long deadlineNanos;
        /**
         * The last entry claimed for withdrawal or cleanup: the guard is per entry, not per
         * acquisition, since an acquisition whose entry was lost stands in the queue again with a new
         * one.
         */
        volatile @Nullable QueueEntry withdrawn;
        /**
         * The local queue this acquisition waited in; null when it never waited locally (a carrier
         * finds its queue by name).
         */
        volatile LocalQueues.@Nullable Queue localQueue;
        /**
         * Set when the outcome of this acquisition's request became unknown: the backend had not
         * answered it within the wait plus connectTimeout, or it failed with no entry known. Only
         * then does a local waiter behind it, while it is CANCELLED with no entry, hear of an
         * outage ({@link #localTimeout}); a request merely in flight when its acquisition was
         * cancelled (a timeout, an interrupt, a cancelled future, a refused hand-off) is the lock
         * being busy. Never cleared: once the entry is known ({@code entry != null}) it no longer
         * counts.
         */
        volatile boolean outcomeUnknown;

        /** A semaphore's permits and total, set at construction; a lock's are 1 and 1. */
        volatile int permits = 1;

        volatile int maxPermits = 1;
    }

    private volatile @Nullable Rare rare;

    /** The side object, made (once, by CAS) if it does not exist yet. */
    private Rare rare() {
        Rare r = rare;
        if (r != null) {
            return r;
        }
        Rare fresh = new Rare();
        Rare won = (Rare) RARE.compareAndExchange(this, null, fresh);
        return won != null ? won : fresh;
    }

    /** Whether the acquisition waits at most a given time: it has a wait, set at construction. */
    private boolean timed() {
        Rare r = rare;
        return r != null && r.wait != null;
    }

    /** The deadline of a {@link #timed()} acquisition. */
    private long deadlineNanos() {
        return Objects.requireNonNull(rare, "rare").deadlineNanos;
    }

    // Plain volatile fields updated through VarHandles rather than Atomic* objects: a held lock costs
    // a few hundred bytes of heap, not a dozen small objects (see the W4 benchmark).
    private volatile LockState state = LockState.IDLE;
    private volatile int holds;

    @SuppressWarnings("UnusedVariable") // read and written through RENEWING only
    private volatile boolean renewing;

    private volatile int localPhase;

    /** {@link Registry} flags; written only inside the registry's compute for this name. */
    volatile int registered;

    private static final VarHandle STATE;
    private static final VarHandle HOLDS;
    private static final VarHandle WITHDRAWN;
    private static final VarHandle RENEWING;
    private static final VarHandle LOCAL_PHASE;
    private static final VarHandle LOST_LISTENERS;
    private static final VarHandle RARE;
    private static final VarHandle DOWNGRADES;
    private static final VarHandle CANCEL_CAUSE;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            STATE = l.findVarHandle(Acquisition.class, "state", LockState.class);
            HOLDS = l.findVarHandle(Acquisition.class, "holds", int.class);
            WITHDRAWN = l.findVarHandle(Rare.class, "withdrawn", QueueEntry.class);
            RENEWING = l.findVarHandle(Acquisition.class, "renewing", boolean.class);
            LOCAL_PHASE = l.findVarHandle(Acquisition.class, "localPhase", int.class);
            LOST_LISTENERS = l.findVarHandle(Rare.class, "lostListeners", Queue.class);
            DOWNGRADES = l.findVarHandle(Rare.class, "downgrades", int.class);
            CANCEL_CAUSE = l.findVarHandle(Rare.class, "cancelCause", Throwable.class);
            RARE = l.findVarHandle(Acquisition.class, "rare", Rare.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /**
     * Completes with this acquisition when granted, or exceptionally once the entry is withdrawn.
     * Dropped (set to null) once it completed with the grant, so that a held lock does not keep a
     * finished future (W4); {@link #outcome()} then answers with a completed one. Dependents are
     * attached before the acquisition starts, so none is lost; the null is written after the
     * completion (both volatile), so a reader that sees null knows the grant happened before.
     */
    private volatile @Nullable CompletableFuture<Acquisition> outcome = new CompletableFuture<>();

    private volatile @Nullable QueueEntry entry;
    /**
     * The backend grant's token and validity, kept as fields rather than the {@link Grant} record
     * (one object less per held lock, W4). Written before the move to HELD (a volatile CAS), so a
     * thread that sees HELD or a later state sees them; the validity moves on with each renewal.
     */
    private volatile long backendToken;

    private volatile long validUntilNanos;
    private volatile @Nullable CompletableFuture<Void> released;

    /** Renewal bookkeeping, owned by {@link Renewer}: when the last successful renewal was sent. */
    volatile long renewedAt;
    /** Why the last renewal failed, or null. */
    @Nullable
    Throwable lastRenewalFailure() {
        Rare r = rare;
        return r == null ? null : r.lastRenewalFailure;
    }

    /** Records a renewal's failure (null: it succeeded); makes the side object only for a failure. */
    void lastRenewalFailure(@Nullable Throwable failure) {
        Rare r = failure == null ? rare : rare();
        if (r != null) {
            r.lastRenewalFailure = failure;
        }
    }

    /** Low bits of the public fencing token kept for JVM-local hand-offs (see {@link LocalQueues}). */
    static final int LOCAL_BITS = 10;

    /** The local bits of a public token. */
    static final long LOCAL_MASK = (1L << LOCAL_BITS) - 1;

    static final int LOCAL_NONE = 0;
    static final int LOCAL_WAITING = 1;
    static final int LOCAL_HANDED = 2;
    static final int LOCAL_PROMOTED = 3;
    static final int LOCAL_CANCELLED = 4;
    /** The local queue this acquisition waited in, or null (see {@link Rare#localQueue}). */
    LocalQueues.@Nullable Queue localQueue() {
        Rare r = rare;
        return r == null ? null : r.localQueue;
    }

    /** Records the local queue this acquisition joined (as a waiter or the queue's carrier). */
    void localQueue(LocalQueues.Queue q) {
        rare().localQueue = q;
    }
    /** How many local hand-offs separate this grant from its backend grant. */
    volatile int localSeq;

    /**
     * The client's {@linkplain EngineClient#lastLoss() loss count} when this grant was made by the
     * backend (a local hand-off inherits it with the grant). A loss of every grant that runs while
     * this one moves to HELD may miss it; the count having moved meanwhile tells.
     */
    private volatile int grantEpoch;

    private volatile long fencingToken;

    Acquisition(
            EngineClient client,
            String name,
            LockMode mode,
            int permits,
            int maxPermits,
            @Nullable Thread owner,
            boolean reentrant,
            @Nullable Duration wait) {
        this.client = client;
        this.id = client.nextAcquisitionId();
        this.name = name;
        this.mode = mode;
        this.owner = owner;
        this.reentrant = reentrant && owner != null;
        if (wait != null || permits != 1 || maxPermits != 1) {
            // A timed acquisition makes the side object anyway (its timer): wait and deadline go
            // there; so do a semaphore's permits (a lock's are 1 of 1).
            Rare r = new Rare();
            if (wait != null) {
                r.wait = wait;
                r.deadlineNanos = client.ticker.read() + EngineLock.saturatedNanos(wait);
            }
            r.permits = permits;
            r.maxPermits = maxPermits;
            this.rare = r;
        }
    }

    LockState state() {
        return state;
    }

    /**
     * No reply to the request within the wait plus connectTimeout: an outage, not a holder. The
     * cause is the last request failure the client saw since its connection last worked, or else a
     * {@link TimeoutException} for this unanswered request.
     */
    private LockBackendException unanswered(long waitedNanos) {
        long ms = Duration.ofNanos(waitedNanos).toMillis();
        Throwable cause = client.lastFailure();
        return new LockBackendException(
                name,
                client.backendName,
                "no answer from " + client.address + " within " + ms
                        + " ms (the wait plus connectTimeout " + client.options.connectTimeout()
                        + "): it is unreachable or overloaded, so whether anyone holds the lock is unknown",
                cause != null
                        ? cause
                        : new TimeoutException("request to " + client.address + " unanswered after " + ms + " ms"));
    }

    /**
     * The wait ended while the connection was known to be down: an outage, not a holder. The cause
     * is the last request failure the client saw since its connection last worked, or else the
     * backend's report that the connection dropped ({@link EngineClient#downCause}).
     */
    private LockBackendException backendDown() {
        return new LockBackendException(
                name,
                client.backendName,
                "the connection to " + client.address + " is down (reconnecting), so whether anyone holds the lock"
                        + " is unknown",
                client.downCause());
    }

    /**
     * A request went unanswered {@code agoNanos} ago and the backend has answered nothing since: an
     * outage, not a holder. The cause is that request's failure.
     */
    private LockBackendException backendSilent(long agoNanos) {
        return new LockBackendException(
                name,
                client.backendName,
                "a request to " + client.address + " went unanswered "
                        + Duration.ofNanos(agoNanos).toMillis()
                        + " ms ago and nothing has been answered since, so whether anyone holds the lock is unknown",
                client.lastFailure());
    }

    /**
     * A request of this acquisition failed: a {@link LockBackendException} that names the server's
     * address, with the failure as its cause (a backend's own exception that already names the
     * address is kept as it is).
     */
    private RuntimeException failed(Throwable error) {
        if (error instanceof IllegalStateException || error instanceof IllegalArgumentException) {
            return (RuntimeException) error;
        }
        String message = String.valueOf(error.getMessage());
        if (error instanceof LockBackendException lbe && message.contains(client.address)) {
            return lbe;
        }
        String detail;
        if (error instanceof io.dlock.DistributedLockException) {
            // Its message starts with the lock and backend this one names again.
            String lockPrefix = "lock '" + name + "' on " + client.backendName + ": ";
            String clientPrefix = client.backendName + ": ";
            detail = message.startsWith(lockPrefix)
                    ? message.substring(lockPrefix.length())
                    : message.startsWith(clientPrefix) ? message.substring(clientPrefix.length()) : message;
        } else {
            detail = EngineClient.redact(error.toString());
        }
        return new LockBackendException(
                name, client.backendName, "request to " + client.address + " failed: " + detail, error);
    }

    private LockTimeoutException timedOut() {
        Rare r = Objects.requireNonNull(rare, "rare");
        return client.timedOut(name, Objects.requireNonNull(r.wait, "wait"));
    }

    /**
     * The grant of an acquisition that was granted (HELD and every state after it keep it), made
     * afresh from the entry, the backend's token and the validity (for a renewal, and tests).
     */
    Grant grant() {
        return new Grant(entry(), backendToken, validUntilNanos());
    }

    /** The validity of the grant of an acquisition that was granted (see {@link #grant()}). */
    long validUntilNanos() {
        LockState s = state;
        if (s == LockState.IDLE || s == LockState.QUEUED || s == LockState.CANCELLED) {
            throw new IllegalStateException("lock '" + name + "' was not granted (" + s + ")");
        }
        return validUntilNanos;
    }

    /**
     * Takes a renewed grant (sent at {@code sentAt}) if still held. Its validity replaces the old one
     * even when shorter: it is the server's latest word. A grant made on this client's behalf with a
     * longer lease (another client's, in a hand-over) is renewed for this client's own lease, and
     * keeping the longer validity would outlast the server's copy.
     */
    void renewed(Grant renewed, long sentAt) {
        // One renewal at a time (startRenewal), so this read-then-write races with no other writer.
        if (state == LockState.HELD) {
            backendToken = renewed.fencingToken();
            validUntilNanos = renewed.validUntilNanos();
            renewedAt = sentAt;
        }
    }

    /** Moves {@code from -> to}; false if the state was not {@code from}; ISE on an illegal edge. */
    boolean transition(LockState from, LockState to) {
        if (!from.canMoveTo(to)) {
            throw new IllegalStateException("lock '" + name + "': " + from + " -> " + to);
        }
        if (!STATE.compareAndSet(this, from, to)) {
            return false;
        }
        if (log.isDebugEnabled()) {
            log.debug("[lock={} state={}] {} -> {} (acquisition {})", name, to, from, to, id);
        }
        return true;
    }

    /** Sends the first request. Never blocks. */
    void start() {
        if (!transition(LockState.IDLE, LockState.QUEUED)) {
            // Cancelled before it started (the client closed between newAcquisition and here):
            // cancel already answered the caller; free the local queue's carrier slot it may hold.
            finishCancelled();
            return;
        }
        send();
    }

    private void send() {
        if (timed()) {
            long left = deadlineNanos() - client.ticker.read();
            boolean down = left <= 0 && client.connectionDown();
            long silentFor = left <= 0 && !down ? client.recentlyUnanswered() : -1;
            if (down || silentFor >= 0) {
                // One attempt and no wait, on a connection known to be down (reported so, or a request
                // left unanswered within connectTimeout and nothing answered since): it could only fail
                // after connectTimeout. Unreachable is not busy: say so now.
                if (cancelFrom(LockState.QUEUED, down ? backendDown() : backendSilent(silentFor))) {
                    finishCancelled();
                }
                return;
            }
            // The wait is judged at the first position (so Duration.ZERO still makes one attempt);
            // this backstop bounds the overrun when the backend is slow to answer at all.
            long backstop = Math.max(0, left) + client.options.connectTimeout().toNanos();
            cancelTimer();
            rare().timer = client.schedule(
                    () -> {
                        if (entry == null) {
                            unansweredOutage(backstop);
                        }
                    },
                    backstop);
        }
        // The blocking caller's own thread (not a releaser promoting it, not a callback) only waits
        // for this: a protocol whose I/O blocks may run the request on it.
        enqueue(owner == Thread.currentThread());
    }

    /**
     * Sends the enqueue. An untimed acquisition ({@code acquire()}) has no wait to bound it: it waits
     * through an outage (a failover, a restart) for the reply, and fails only if the request fails;
     * a timed acquisition's backstop is armed by {@link #send()}.
     */
    private void enqueue(boolean callerWaits) {
        client.protocol.enqueue(request(), callerWaits).whenComplete(this::onPosition);
    }

    /**
     * The request went unanswered for {@code waitedNanos}: an outage. The caller hears of it now,
     * and the reply, whenever it comes, withdraws whatever the request made (onPosition/onFailure).
     */
    private void unansweredOutage(long waitedNanos) {
        rare().outcomeUnknown = true; // before the cancel makes it visible
        LockBackendException outage = unanswered(waitedNanos);
        // The latest sign of the outage, for the next caller's exception and zero-wait attempts too.
        client.requestUnanswered(Objects.requireNonNull(outage.getCause(), "cause"));
        cancel(outage);
        if (entry == null && state == LockState.CANCELLED) {
            // The request is still unanswered (a partition; the protocol may retry for long).
            completeCancelled();
        }
    }

    /** Becomes a local waiter (QUEUED with no backend entry); false if already cancelled. */
    boolean enterLocalWait() {
        localPhase = LOCAL_WAITING;
        return transition(LockState.IDLE, LockState.QUEUED);
    }

    /** Arms the wait's deadline for a local waiter; a zero wait gives up at once. */
    void armLocalDeadline() {
        if (!timed()) {
            return;
        }
        long remaining = deadlineNanos() - client.ticker.read();
        if (remaining <= 0) {
            cancel(localTimeout());
            return;
        }
        rare().timer = client.schedule(() -> cancel(localTimeout()), remaining);
    }

    /**
     * Why a local waiter's wait ended. Behind a carrier that gave up on a backend that never answered
     * it (and still waits for that reply to withdraw its request), the lock is not known to be busy:
     * that is an outage, as for the carrier itself. A carrier that is CANCELLED with no entry for any
     * other reason is not one: its request is in flight on a healthy connection (its own wait ended,
     * or it was interrupted or cancelled, before the reply came), or it is a waiter cancelled just as
     * a hand-off claimed it, which stays the carrier until the hand-off moves on to the next waiter;
     * either way the lock is busy. Only {@link Rare#outcomeUnknown} tells the two apart.
     */
    private RuntimeException localTimeout() {
        if (client.connectionDown()) {
            return backendDown();
        }
        return carrierUnanswered() ? carrierOutage() : timedOut();
    }

    /** Whether this local waiter's carrier gave up on a request the backend has not answered. */
    private boolean carrierUnanswered() {
        LocalQueues.Queue q = localQueue();
        Acquisition carrier;
        if (q == null) {
            carrier = null;
        } else {
            synchronized (q) {
                carrier = q.carrier;
            }
        }
        return carrier != null
                && carrier.entry == null
                && carrier.state == LockState.CANCELLED
                && carrier.outcomeUnknown();
    }

    private LockBackendException carrierOutage() {
        return new LockBackendException(
                name,
                client.backendName,
                "an earlier request for this lock from this client is still unanswered by " + client.address
                        + ", so whether anyone holds the lock is unknown",
                client.lastFailure());
    }

    /** Whether this acquisition's request went unanswered or failed unseen (see {@link Rare#outcomeUnknown}). */
    private boolean outcomeUnknown() {
        Rare r = rare;
        return r != null && r.outcomeUnknown;
    }

    /** A local waiter whose turn came to stand in the backend queue (claimed as PROMOTED). */
    void startPromoted() {
        cancelTimer();
        send(); // if cancelled meanwhile, onPosition withdraws the new entry and finishes
    }

    /**
     * Takes over {@code from}'s grant by a local hand-off (claimed as HANDED). The backend entry
     * stays; the token rises by one. False if this waiter was cancelled first: it is then finished
     * here and the caller tries the next one.
     */
    boolean takeOver(Acquisition from) {
        cancelTimer();
        entry = from.entry;
        backendToken = from.backendToken;
        validUntilNanos = from.validUntilNanos;
        fencingToken = from.fencingToken + 1;
        localSeq = from.localSeq + 1;
        renewedAt = from.renewedAt;
        holds = 1;
        grantEpoch = from.grantEpoch;
        if (transition(LockState.QUEUED, LockState.HELD)) {
            client.onGranted(this);
            granted();
            loseIfALossRacedTheGrant();
            return true;
        }
        holds = 0;
        entry = null;
        completeCancelled();
        return false;
    }

    long fencingToken() {
        return fencingToken;
    }

    /** The outcome: the pending future, or once granted, a completed one (see {@link #outcome}). */
    CompletableFuture<Acquisition> outcome() {
        CompletableFuture<Acquisition> o = outcome;
        return o != null ? o : CompletableFuture.completedFuture(this);
    }

    /**
     * A loss of every grant ({@code EngineClient.loseAll}) scans for HELD ones. A backend grant
     * moving into HELD behind the scan is missed, and so is a local hand-off, which moves its grant
     * out of HELD (the carrier) and back into it (the waiter). The loss count taken with the grant,
     * compared once this one is HELD, tells.
     */
    private void loseIfALossRacedTheGrant() {
        EngineClient.Loss last = client.lastLoss();
        if (last.epoch() != grantEpoch) {
            lose(last.why(), last.reason() + " (while this grant was being made)", null);
        }
    }

    /** Completes the outcome with the grant and drops it; kept if it had failed already. */
    private void granted() {
        CompletableFuture<Acquisition> o = outcome;
        if (o != null && o.complete(this)) {
            outcome = null;
        }
    }

    /** Claims the single renewal slot; false if a renewal is already in flight. */
    boolean startRenewal() {
        return RENEWING.compareAndSet(this, false, true);
    }

    void endRenewal() {
        renewing = false;
    }

    /**
     * Claims a local waiter for {@code phase}. A locally queued acquisition is NONE (never waited
     * locally) or WAITING, then exactly one of HANDED (a local hand-off claimed it), PROMOTED (it
     * went to the backend) or CANCELLED.
     */
    boolean claimLocal(int phase) {
        return LOCAL_PHASE.compareAndSet(this, LOCAL_WAITING, phase);
    }

    /** Makes this read a downgrade of {@code write}, held by the same thread. */
    void downgradeOf(Acquisition write) {
        rare().downgradeOf = write;
    }

    private LockRequest request() {
        Rare r = rare;
        Acquisition write = r == null ? null : r.downgradeOf;
        return new LockRequest(
                name,
                id,
                mode,
                r == null ? 1 : r.permits,
                r == null ? 1 : r.maxPermits,
                write == null ? null : write.entry().key());
    }

    /**
     * The public token of a backend grant. A downgraded read granted while its write grant is still
     * held takes the write's token plus one (in the local bits), not the backend's: its backend
     * entry may stand behind writers queued for the write lock, whose backend tokens are lower,
     * and tokens must rise in grant order (a queued writer is granted only after this read). The
     * local bits bound how far it may rise: past the write's unused local bits, every further
     * downgrade repeats the last token, so that none reaches the next backend grant's.
     */
    private long tokenOf(Grant g) {
        Rare r = rare;
        Acquisition write = r == null ? null : r.downgradeOf;
        if (write != null && write.state == LockState.HELD) {
            long base = write.fencingToken;
            long room = LOCAL_MASK - (base & LOCAL_MASK);
            Rare w = write.rare();
            int taken;
            do {
                taken = (int) DOWNGRADES.getVolatile(w);
            } while (taken < room && !DOWNGRADES.compareAndSet(w, taken, taken + 1));
            return base + Math.min(taken + 1L, room);
        }
        return g.fencingToken() << LOCAL_BITS;
    }

    /** The backend entry of an acquisition that was granted (HELD and every state after it keep it). */
    QueueEntry entry() {
        QueueEntry e = entry;
        if (e == null) {
            throw new IllegalStateException("lock '" + name + "' has no entry (" + state + ")");
        }
        return e;
    }

    private void onPosition(Position position, Throwable error) {
        if (error != null) {
            onFailure(unwrap(error));
            return;
        }
        client.requestAnswered();
        entry = position.entry();
        if (state != LockState.QUEUED) {
            // Cancelled while the request was in flight: this path owns the withdrawal.
            withdraw();
            return;
        }
        Grant g = position.grant();
        if (g != null) {
            backendToken = g.fencingToken();
            validUntilNanos = g.validUntilNanos();
            fencingToken = tokenOf(g);
            localSeq = 0;
            // Before the move to HELD: the renewer's tick sees every HELD acquisition (a local
            // hand-off copies the renewal time of the grant it takes over instead).
            renewedAt = client.ticker.read();
            holds = 1;
            grantEpoch = client.lastLoss().epoch();
            if (transition(LockState.QUEUED, LockState.HELD)) {
                cancelTimer();
                client.onGranted(this);
                granted();
                loseIfALossRacedTheGrant();
            } else {
                holds = 0;
                withdraw();
            }
            return;
        }
        if (timed()) {
            long remaining = deadlineNanos() - client.ticker.read();
            if (remaining <= 0) {
                cancel(timedOut());
                return;
            }
            Rare r = rare();
            if (!r.deadlineArmed) {
                r.deadlineArmed = true;
                cancelTimer();
                r.timer =
                        client.schedule(() -> cancel(client.connectionDown() ? backendDown() : timedOut()), remaining);
            }
        }
        client.protocol.awaitTurn(position).whenComplete(this::onPosition);
    }

    @SuppressWarnings("ReferenceEquality") // entries are claimed by identity: a re-enqueued one is a new object
    private void onFailure(Throwable error) {
        boolean entryGone = error instanceof EntryLostException;
        QueueEntry lostEntry = entry;
        if (entryGone && state == LockState.QUEUED) {
            // Our entry vanished (its session ended): stand in the queue again, same deadline.
            log.debug("[lock={} state=QUEUED] entry lost, enqueueing again: {}", name, error.getMessage());
            entry = null;
            if (state == LockState.QUEUED) {
                enqueue(false);
                return;
            }
            // A cancel landed after the first check: it saw the lost entry or none, and nothing new
            // was sent. If it is withdrawing the lost entry, that withdrawal finishes.
            if (lostEntry == null || withdrawn() != lostEntry) {
                finishCancelled();
            }
            return;
        }
        client.requestFailed(error);
        Throwable cause = failed(error);
        if (lostEntry == null) {
            // The enqueue failed: whether it made an entry is unknown until cleanupUnknownEntry
            // looks. Recorded before the cancel makes it visible to local waiters (localTimeout).
            rare().outcomeUnknown = true;
        }
        cancelFrom(LockState.QUEUED, cause);
        if (state != LockState.CANCELLED) {
            return;
        }
        if (lostEntry != null && withdrawn() == lostEntry) {
            // This entry's withdrawal is under way (a protocol may fail the pending wait of an
            // entry it is asked to remove): the withdrawal answers the caller once it is done.
            return;
        }
        if (entryGone) {
            finishCancelled();
        } else if (entry != null) {
            withdraw(); // a wait failed: the entry is known
        } else {
            cleanupUnknownEntry(); // the enqueue's outcome is unknown: look for an entry of ours
        }
    }

    /**
     * Withdraws a pending acquisition (timeout, interrupt, cancel, close). If it is already held,
     * does nothing: the caller decides whether to release. Never blocks.
     */
    void cancel(Throwable cause) {
        if (cancelFrom(LockState.IDLE, cause)) {
            // Nothing was sent and nothing will be: nobody else would ever complete the outcome.
            finishCancelled();
            return;
        }
        if (!cancelFrom(LockState.QUEUED, cause)) {
            return;
        }
        cancelTimer();
        if (LOCAL_PHASE.compareAndSet(this, LOCAL_WAITING, LOCAL_CANCELLED)) {
            client.local.removeWaiter(this);
            finishCancelled();
            return;
        }
        if (localPhase == LOCAL_HANDED) {
            return; // a hand-off claimed it: takeOver sees CANCELLED and finishes it
        }
        if (entry != null) {
            withdraw();
        }
        // else: the enqueue in flight sees CANCELLED in onPosition/onFailure and withdraws there.
    }

    /** Claims {@code e} for removal; false if it was claimed already (each entry goes once). */
    @SuppressWarnings("ReferenceEquality") // entries are claimed by identity: a re-enqueued one is a new object
    private boolean claimWithdrawal(QueueEntry e) {
        Rare r = rare();
        QueueEntry last;
        do {
            last = r.withdrawn;
            if (last == e) {
                return false;
            }
        } while (!WITHDRAWN.compareAndSet(r, last, e));
        return true;
    }

    private @Nullable QueueEntry withdrawn() {
        Rare r = rare;
        return r == null ? null : r.withdrawn;
    }

    private void withdraw() {
        QueueEntry e = entry;
        if (e == null || !claimWithdrawal(e)) {
            return;
        }
        CompletableFuture<?> unused = client.sendRelease(e, false).whenComplete((ok, err) -> {
            if (err != null) {
                log.warn("[lock={} state=CANCELLED] could not withdraw entry {}: {}", name, e.key(), err.toString());
            }
            finishCancelled();
        });
    }

    /**
     * Finds the entry an unanswered enqueue may have made, and removes it. A lookup that fails (the
     * connection is still down) is not taken for "none": the entry would block the lock for every
     * client for as long as its session lives. So the lookup is repeated with the retry policy's
     * back-off, up to its retries (the protocol's own lookup keeps trying for as long as the entry's
     * session may live, and a lease backend's entry runs out by itself). The caller hears of the
     * failure once the entry is gone, when the first lookup fails, or after the connect timeout if
     * the lookup has not answered by then; the lookup goes on without it.
     */
    private void cleanupUnknownEntry() {
        lookUpAndRemove(0);
        if (!outcome().isDone()) {
            try {
                // finishCancelled, not only the caller's answer: the next local waiter goes to the
                // backend now (behind the unknown entry, if it exists, until the lookup removes it).
                ScheduledFuture<?> unused = client.schedule(
                        this::finishCancelled, client.options.connectTimeout().toNanos());
            } catch (java.util.concurrent.RejectedExecutionException e) {
                finishCancelled(); // the client is closing
            }
        }
    }

    private void lookUpAndRemove(int attempt) {
        client.protocol
                .findOwnEntry(name, id)
                .thenCompose(found -> found.isPresent() && claimWithdrawal(found.get())
                        ? client.sendRelease(found.get(), false)
                        : CompletableFuture.<Void>completedFuture(null))
                .whenComplete((ok, err) -> {
                    if (err == null || !client.isOpen()) {
                        finishCancelled();
                        return;
                    }
                    client.requestFailed(err);
                    if (attempt >= client.options.retryPolicy().maxRetries()) {
                        // The protocol's own lookup retries for as long as the entry's session may
                        // live (ZooKeeper); a lease backend's entry runs out by itself.
                        log.warn(
                                "[lock={} state=CANCELLED] gave up looking for the entry of {} after {} attempts: {}",
                                name,
                                id,
                                attempt + 1,
                                err.toString());
                        finishCancelled();
                        return;
                    }
                    // The caller hears of the failure now (the enqueue failed; nothing is known to
                    // be held), and the next local waiter may go; the lookup goes on without them.
                    finishCancelled();
                    log.debug(
                            "[lock={} state=CANCELLED] looking for the entry of {} failed ({}); looking again",
                            name,
                            id,
                            err.toString());
                    try {
                        ScheduledFuture<?> unused =
                                client.schedule(() -> lookUpAndRemove(attempt + 1), backoffNanos(attempt));
                    } catch (java.util.concurrent.RejectedExecutionException e) {
                        finishCancelled(); // closed: the backend's session ends with the client
                    }
                });
    }

    private long backoffNanos(int attempt) {
        long base = client.options.retryPolicy().baseSleep().toNanos();
        long max = client.options.retryPolicy().maxSleep().toNanos();
        return Math.min(max, base << Math.min(20, attempt));
    }

    /**
     * The client closed and its backend with it: a request still unanswered never will be, so the
     * caller is answered now. Touches no backend.
     */
    void closedUnder() {
        Throwable closed = new IllegalStateException(client.backendName + " client closed");
        if (!cancelFrom(LockState.QUEUED, closed)) {
            cancelFrom(LockState.IDLE, closed);
        }
        cancelTimer();
        if (!outcome().isDone()) {
            Throwable cause = cancelCause();
            outcome().completeExceptionally(cause != null ? cause : closed);
        }
    }

    /**
     * Moves {@code from -> CANCELLED}. The cause is recorded first (the first recorded wins), so a
     * thread that completes the outcome right after the move always finds it.
     */
    private boolean cancelFrom(LockState from, Throwable cause) {
        if (state != from) {
            return false;
        }
        CANCEL_CAUSE.compareAndSet(rare(), null, cause);
        return transition(from, LockState.CANCELLED);
    }

    private void finishCancelled() {
        // The local queue first: a caller woken by the outcome may try again at once, and must not
        // find this acquisition still standing in the backend for the JVM and queue behind it.
        client.local.ended(this);
        completeCancelled();
    }

    private void completeCancelled() {
        Throwable cause = cancelCause();
        outcome().completeExceptionally(cause != null ? cause : new IllegalStateException("cancelled"));
    }

    /** Adds a nested hold; false if the grant is no longer valid (caller starts a fresh acquisition). */
    boolean reenter() {
        HOLDS.getAndAdd(this, 1);
        if (isValid()) {
            return true;
        }
        HOLDS.getAndAdd(this, -1);
        return false;
    }

    /**
     * Drops one hold. When the last one goes, releases the grant, or, if it was lost, removes the
     * backend entry that may still exist (the session may have survived a suspension). Returns the
     * release stage. {@code callerWaits}: the calling thread waits for that stage and does nothing
     * else meanwhile (a lease's close), so the protocol may release on it.
     */
    CompletableFuture<Void> exit(boolean callerWaits) {
        int left = (int) HOLDS.getAndAdd(this, -1) - 1;
        if (left > 0) {
            return CompletableFuture.completedFuture(null);
        }
        if (left < 0) {
            HOLDS.getAndAdd(this, 1);
            return CompletableFuture.completedFuture(null);
        }
        if (state == LockState.LOST) {
            client.onEnded(this);
            return cleanupAfterLoss();
        }
        return release(callerWaits);
    }

    /**
     * Removes the entry a lost grant may have left. Called when its last hold closes, or when its
     * owner thread acquires the same lock afresh while still holding the lost lease (otherwise the
     * new entry would queue behind the stale one and wait for itself).
     */
    CompletableFuture<Void> cleanupAfterLoss() {
        QueueEntry e = entry;
        if (e == null || !claimWithdrawal(e)) {
            return CompletableFuture.completedFuture(null);
        }
        CompletableFuture<Void> cleaned = client.sendRelease(e, false);
        client.local.ended(this);
        return cleaned.handle((ok, err) -> {
            if (err != null) {
                log.debug("[lock={} state=LOST] cleanup of {} failed: {}", name, e.key(), err.toString());
            }
            return null;
        });
    }

    int holds() {
        return holds;
    }

    /** Releases the grant regardless of the hold count (client close, abandoned grant). */
    CompletableFuture<Void> release() {
        return release(false);
    }

    private CompletableFuture<Void> release(boolean callerWaits) {
        boolean mayHandOff = mode == LockMode.EXCLUSIVE
                && client.options.localQueueing()
                && client.isOpen()
                && grantOutlastsHandOff();
        if (!transition(LockState.HELD, LockState.RELEASING)) {
            if (state == LockState.LOST) {
                // Lost since the caller looked (the stall check inside grantOutlastsHandOff above,
                // or the timer thread's): the entry may still be on the server, where it would
                // block every other client, so it goes as a lost grant's does.
                client.onEnded(this);
                return cleanupAfterLoss();
            }
            CompletableFuture<Void> r = released;
            return r != null ? r : CompletableFuture.completedFuture(null);
        }
        holds = 0;
        Rare rr = rare;
        Queue<Consumer<LockLostException>> listeners = rr == null ? null : rr.lostListeners;
        if (listeners != null) {
            listeners.clear();
        }
        client.onEnded(this);
        if (mayHandOff && client.local.handOff(this)) {
            transition(LockState.RELEASING, LockState.RELEASED);
            CompletableFuture<Void> done = CompletableFuture.completedFuture(null);
            released = done;
            return done;
        }
        QueueEntry e = entry();
        CompletableFuture<Void> done = client.sendRelease(e, callerWaits).handle((ok, err) -> {
            if (err != null) {
                log.warn("[lock={} state=RELEASING] release of {} failed: {}", name, e.key(), err.toString());
            }
            transition(LockState.RELEASING, LockState.RELEASED);
            return null;
        });
        released = done;
        client.local.ended(this); // after the release is sent: the next local waiter queues behind it
        return done;
    }

    /** Whether the grant is valid with enough time left to be worth passing on. */
    private boolean grantOutlastsHandOff() {
        if (!isValid()) {
            return false;
        }
        long until = validUntilNanos;
        return until == Long.MAX_VALUE || until - client.ticker.read() > client.renewer.lossThresholdNanos();
    }

    /**
     * Marks the grant lost and runs the listeners once. The backend entry stays until the last hold
     * is closed: if the loss is only the client's conservative guess (a long suspension or stall
     * while the session lives on), deleting it now would let the next holder in while this one may
     * still be inside its critical section.
     */
    void lose(LockMetrics.LossCause why, String reason, @Nullable Throwable cause) {
        if (!transition(LockState.HELD, LockState.LOST)) {
            return;
        }
        client.metrics.leaseLost(this, why);
        // The public token, the one a fenced resource saw: a backend's own number only where labelled.
        rare().lostCause =
                new LockLostException(name, client.backendName, "fencing token " + fencingToken + ": " + reason, cause);
        log.warn("[lock={} state=LOST] fencing token {}: {}", name, fencingToken, reason);
        client.onLost(this);
        // Local waiters need not wait for the owner to close a lost lease: the next one queues in
        // the backend, behind the lost entry if the server still has it.
        client.local.ended(this);
        client.listeners.execute(this::runLostListeners);
    }

    void addLostListener(Consumer<LockLostException> listener) {
        Rare r = rare();
        Queue<Consumer<LockLostException>> listeners = r.lostListeners;
        if (listeners == null) {
            Queue<Consumer<LockLostException>> fresh = new ConcurrentLinkedQueue<>();
            listeners = LOST_LISTENERS.compareAndSet(r, null, fresh) ? fresh : Objects.requireNonNull(r.lostListeners);
        }
        listeners.add(listener);
        if (state == LockState.LOST) {
            runLostListeners();
        }
    }

    private void runLostListeners() {
        Rare r = rare;
        if (r == null) {
            return;
        }
        LockLostException cause = r.lostCause;
        Queue<Consumer<LockLostException>> listeners = r.lostListeners;
        if (cause == null || listeners == null) {
            // LOST, but lose() has not set the cause yet: its own run, after it has, takes these.
            return;
        }
        Consumer<LockLostException> l;
        while ((l = listeners.poll()) != null) {
            try {
                l.accept(cause);
            } catch (Throwable e) { // even an Error: the Lease contract lets no listener skip the others
                log.warn("[lock={} state=LOST] onLost listener threw", name, e);
            }
        }
    }

    @Nullable
    LockLostException lostCause() {
        Rare r = rare;
        return r == null ? null : r.lostCause;
    }

    private @Nullable Throwable cancelCause() {
        Rare r = rare;
        return r == null ? null : r.cancelCause;
    }

    boolean isValid() {
        client.stallDetector.check();
        if (state != LockState.HELD) {
            return false;
        }
        long until = validUntilNanos;
        return until == Long.MAX_VALUE || until - client.ticker.read() > 0;
    }

    /**
     * Waits for the outcome of a blocking acquisition. On interrupt, withdraws (or releases a grant
     * that won the race) before throwing, so nothing stays queued or held.
     */
    Acquisition await(boolean interruptible) throws InterruptedException {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return outcome().get();
                } catch (InterruptedException e) {
                    if (interruptible) {
                        abandon(new java.util.concurrent.CancellationException("interrupted"));
                        throw e;
                    }
                    // Lock.lock() and tryLock(): keep the place in the queue, restore the flag after.
                    interrupted = true;
                } catch (ExecutionException e) {
                    throw rethrow(e.getCause() != null ? e.getCause() : e);
                } catch (java.util.concurrent.CancellationException e) {
                    throw new IllegalStateException("lock '" + name + "': acquisition cancelled", e);
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Gives up on this acquisition and waits (bounded, uninterruptibly) until nothing is left. */
    void abandon(Throwable cause) {
        cancel(cause);
        long bound = client.options.connectTimeout().toNanos();
        boolean interrupted = false;
        long end = System.nanoTime() + bound;
        while (true) {
            try {
                outcome().get(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
                // The grant won the race: give it back.
                release().get(Math.max(0, end - System.nanoTime()), TimeUnit.NANOSECONDS);
                break;
            } catch (InterruptedException ie) {
                interrupted = true;
            } catch (ExecutionException | TimeoutException | RuntimeException ee) {
                break; // withdrawn (or not confirmed in time; the protocol keeps retrying)
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private void cancelTimer() {
        Rare r = rare;
        ScheduledFuture<?> t = r == null ? null : r.timer;
        if (t != null) {
            t.cancel(false);
        }
    }

    static RuntimeException rethrow(Throwable cause) {
        if (cause instanceof RuntimeException re) {
            return re;
        }
        if (cause instanceof Error err) {
            throw err;
        }
        return new CompletionException(cause);
    }

    static Throwable unwrap(Throwable t) {
        while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    @Override
    public String toString() {
        return "Acquisition[lock=" + name + ", state=" + state + ", id=" + id + "]";
    }
}
