package io.dlock.core;

import io.dlock.Capability;
import io.dlock.DistributedLock;
import io.dlock.DistributedReadWriteLock;
import io.dlock.DistributedSemaphore;
import io.dlock.LeaderElection;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockInterruptedException;
import io.dlock.LockOptions;
import io.dlock.LockTimeoutException;
import io.dlock.Ticker;
import io.dlock.spi.ConnectionState;
import io.dlock.spi.DataLossFence;
import io.dlock.spi.EntryLostException;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockProtocol;
import io.dlock.spi.QueueEntry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The {@link LockClient} every backend shares.
 *
 * <p>Threads: callers park in their own blocking calls; {@code acquireAsync} futures complete on
 * the callback pool ({@code callbackThreads}), where users' continuations then run; {@code
 * onLost} listeners run on a listener thread of their own that nothing else uses, so those
 * continuations cannot delay them; renewal, suspension and stall checks and wait deadlines run on
 * the timer thread; backend replies arrive on the backend client's threads and only complete
 * futures.
 *
 * <p>Concurrency: the lifecycle ({@link Lifecycle}) moves by CAS. Thread holds and live
 * acquisitions are kept in one concurrent map by lock name ({@link Registry}); an acquisition adds
 * itself when created (and its hold when granted) and removes itself when it ends. Connection events
 * arrive in order on the backend's event thread; the suspension timer runs on the client's timer
 * thread and acts only if its suspension epoch is still current.
 *
 * <p>Failure: SUSPENDED longer than the backend's {@link LockBackend#maxSuspension()} or LOST
 * makes every held lease LOST, and its listeners run once. A JVM stall (GC pause, SIGSTOP) longer
 * than that bound is treated the same way, since the server may have expired the session meanwhile.
 *
 * <p>Invariants: after {@link #close()} returns, this client holds no lease and has no entry queued.
 */
final class EngineClient implements LockClient {
    private static final Logger log = LoggerFactory.getLogger(EngineClient.class);

    /** The client's lifecycle. */
    enum Lifecycle {
        /** Serving requests. */
        OPEN,
        /** Releasing leases and withdrawing waiters; new requests are refused. */
        CLOSING,
        /** Closed; terminal. */
        CLOSED
    }

    final LockBackend backend;
    final LockProtocol protocol;
    final LockOptions options;
    final Ticker ticker;
    final String backendName;
    /**
     * Where the backend's server is, for outage messages: the address part of the backend's {@code
     * toString()} with any user info and password taken out ({@link #addressOf}).
     */
    final String address;
    /**
     * The last failure of a request to the backend (a connection reset, a refused connect, a
     * request timeout), kept as the cause of an outage the engine reports itself (a request left
     * unanswered, a wait that ended while the connection was down). Cleared when the connection is
     * reported back or a request is answered. Written racily on purpose: any recent failure will do.
     */
    private volatile @Nullable Throwable lastFailure;
    /**
     * When ({@link #ticker}) a request last went unanswered for the wait plus connectTimeout, and
     * nothing was answered since; 0 when not. Cleared with {@link #lastFailure}.
     */
    private volatile long unansweredAt;
    /** When ({@link #ticker}) the backend last reported its connection SUSPENDED. */
    private volatile long suspendedAt;
    /** Completes {@code acquireAsync} futures, so users' continuations run here. */
    final ExecutorService callbacks;
    /** Runs {@code onLost} listeners and nothing else, so users' continuations cannot delay them. */
    final ExecutorService listeners;

    private final ScheduledThreadPoolExecutor timer;
    final StallDetector stallDetector;
    final Renewer renewer;
    /** JVM-local queues of exclusive acquisitions (a no-op when the option is off). */
    final LocalQueues local;

    final LockMetrics metrics;

    private final AtomicReference<Lifecycle> lifecycle = new AtomicReference<>(Lifecycle.OPEN);

    /** The latest loss of every grant ({@link #loseAll}), counted; see {@link Acquisition}'s grantEpoch. */
    record Loss(int epoch, LockMetrics.LossCause why, String reason) {}

    private final AtomicInteger releasesInFlight = new AtomicInteger();
    private final CountDownLatch closed = new CountDownLatch(1);
    private volatile @Nullable Thread closing;

    private final AtomicReference<Loss> lastLoss =
            new AtomicReference<>(new Loss(0, LockMetrics.LossCause.SESSION, ""));
    /** Live acquisitions and thread holds, one map node per lock name (see {@link Registry}). */
    final Registry registry = new Registry();
    /** Started, unclosed leader elections: {@link #close()} ends their terms first (onRevoked runs). */
    final Set<EngineLeaderElection> elections = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private final AtomicLong suspension = new AtomicLong();
    /**
     * Acquisition ids: one random prefix per client and a counter, not a SecureRandom UUID each. The
     * prefix is 16 lower-case hex digits (64 random bits), not a whole UUID: the id is kept by every
     * acquisition and is part of every backend's entry key (a znode name, a Redis key), so its length
     * is paid twice per held lock (W4). The alphabet stays a UUID's ({@code [0-9a-f-]}), which every
     * backend's key syntax and Curator's node names accept; the id has exactly one {@code '-'}.
     */
    private final String idPrefix = randomIdPrefix();

    private final AtomicLong ids = new AtomicLong();
    private final java.util.concurrent.atomic.AtomicBoolean suspended = new java.util.concurrent.atomic.AtomicBoolean();

    EngineClient(LockBackend backend, LockOptions options) {
        this.backend = backend;
        this.protocol = backend.protocol();
        this.options = options;
        this.ticker = options.ticker();
        this.backendName = backend.name();
        this.address = addressOf(backend);
        try {
            this.metrics = LockMetrics.of(options, this);
        } catch (RuntimeException | Error e) {
            backend.close(); // refused before anything else was started
            throw e;
        }
        this.callbacks = new ThreadPoolExecutor(
                options.callbackThreads(),
                options.callbackThreads(),
                0,
                TimeUnit.MILLISECONDS,
                new LinkedBlockingQueue<>(),
                daemonThreads("dlock-" + backendName + "-callback"),
                (task, pool) -> task.run()); // after close, complete inline rather than drop a user's future
        this.listeners = new ThreadPoolExecutor(
                1,
                1,
                0,
                TimeUnit.MILLISECONDS,
                new LinkedBlockingQueue<>(),
                daemonThreads("dlock-" + backendName + "-listener"),
                (task, pool) -> task.run());
        this.timer = new ScheduledThreadPoolExecutor(1, daemonThreads("dlock-" + backendName + "-timer"));
        this.timer.setRemoveOnCancelPolicy(true);
        this.stallDetector = new StallDetector(ticker, backend.maxSuspension(), this::onStall);
        this.stallDetector.start(timer);
        this.renewer = new Renewer(this, options.leaseTime(), options.renewal());
        this.local = new LocalQueues(options.maxLocalHandoffs(), registry);
        backend.onConnectionState(this::onConnectionState);
        backend.onForcedRelease(this::onForcedRelease);
    }

    // ---- LockClient

    @Override
    public DistributedLock lock(String name) {
        checkOpen();
        return new EngineLock(this, LockNames.validate(name), LockMode.EXCLUSIVE, options.reentrant());
    }

    @Override
    public DistributedReadWriteLock readWriteLock(String name) {
        checkOpen();
        LockNames.validate(name);
        require(Capability.READ_WRITE, "read-write locks");
        return new EngineReadWriteLock(
                name,
                new EngineLock(this, name, LockMode.READ, options.reentrant()),
                new EngineLock(this, name, LockMode.WRITE, options.reentrant()));
    }

    @Override
    public DistributedSemaphore semaphore(String name, int permits) {
        checkOpen();
        LockNames.validate(name);
        if (permits < 1) {
            throw new IllegalArgumentException("semaphore '" + name + "': permits must be at least 1: " + permits);
        }
        require(Capability.SEMAPHORE, "semaphores");
        return new EngineSemaphore(this, name, permits);
    }

    @Override
    public DistributedLock multiLock(Collection<String> names) {
        checkOpen();
        Objects.requireNonNull(names, "names");
        if (names.isEmpty()) {
            throw new IllegalArgumentException("multiLock needs at least one lock name");
        }
        Set<String> seen = new HashSet<>();
        for (String n : names) {
            if (!seen.add(LockNames.validate(n))) {
                throw new IllegalArgumentException("multiLock names must be distinct; '" + n + "' appears twice");
            }
        }
        require(Capability.MULTI_LOCK, "multi-locks");
        List<EngineLock> parts = new ArrayList<>();
        for (String n : new java.util.TreeSet<>(seen)) { // one global order: no deadlock between multi-locks
            parts.add(new EngineLock(this, n, LockMode.EXCLUSIVE, options.reentrant()));
        }
        return new EngineMultiLock(this, parts);
    }

    @Override
    public LeaderElection leaderElection(String name) {
        checkOpen();
        return new EngineLeaderElection(this, name);
    }

    private void require(Capability capability, String what) {
        if (!capabilities().contains(capability)) {
            throw new UnsupportedOperationException(what + " are not available on the " + backendName
                    + " backend (capability " + capability + "; this backend has " + capabilities() + ")");
        }
    }

    @Override
    public <T> T withLock(String name, Duration wait, Callable<T> action) {
        Objects.requireNonNull(action, "action");
        DistributedLock lock = lock(name);
        Optional<Lease> lease;
        try {
            lease = lock.tryAcquire(wait);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockInterruptedException(name, backendName, e);
        }
        if (lease.isEmpty()) {
            throw timedOut(name, wait);
        }
        try (Lease held = lease.get()) {
            return action.call();
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Exception e) {
            throw new CompletionException(e);
        }
    }

    @Override
    public Set<Capability> capabilities() {
        return backend.capabilities();
    }

    @Override
    public void close() {
        if (!lifecycle.compareAndSet(Lifecycle.OPEN, Lifecycle.CLOSING)) {
            awaitClosedByAnother();
            return;
        }
        closing = Thread.currentThread();
        log.debug("[client={}] closing: {} live acquisitions", backendName, registry.liveCount());
        for (EngineLeaderElection e : List.copyOf(elections)) {
            e.close(false); // its term's onRevoked runs; the releases below include its lease
        }
        List<CompletableFuture<?>> pending = new ArrayList<>();
        for (Acquisition a : registry.live()) {
            if (a.state() == LockState.HELD) {
                pending.add(a.release());
            } else {
                a.cancel(new IllegalStateException(backendName + " client closed"));
                // A grant that landed after the state check is released once it has settled.
                pending.add(a.outcome()
                        .handle((x, e) -> x)
                        .thenCompose(x -> x != null ? x.release() : CompletableFuture.<Void>completedFuture(null)));
            }
        }
        long deadline = System.nanoTime() + options.connectTimeout().toNanos();
        try {
            CompletableFuture.allOf(pending.toArray(new CompletableFuture<?>[0]))
                    .get(options.connectTimeout().toMillis(), TimeUnit.MILLISECONDS);
            awaitReleases(deadline);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            log.warn("[client={}] not every release was confirmed before closing: {}", backendName, e.toString());
        } finally {
            try {
                backend.close();
            } finally {
                timer.shutdownNow();
                // Whatever is still pending (a request the closed backend will never answer) is
                // answered now: no caller of this client may wait for ever.
                for (Acquisition a : registry.live()) {
                    a.closedUnder();
                }
                callbacks.shutdown();
                listeners.shutdown();
                metrics.close();
                lifecycle.set(Lifecycle.CLOSED);
                closed.countDown();
            }
        }
    }

    /**
     * A second caller of {@link #close} returns once the first has closed, as its contract says;
     * not on the closing thread itself (a listener of the backend's close calling close again).
     */
    private void awaitClosedByAnother() {
        if (Thread.currentThread() == closing) {
            return;
        }
        boolean interrupted = false;
        long deadline = System.nanoTime() + 2 * options.connectTimeout().toNanos();
        while (true) {
            try {
                if (!closed.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    log.warn(
                            "[client={}] close() by another thread had not finished after {}",
                            backendName,
                            options.connectTimeout().multipliedBy(2));
                }
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    // ---- engine internals

    /** Acquisitions waiting or holding (lost ones excluded). */
    int liveCount() {
        return registry.liveCount();
    }

    /** Grants this client holds now (for the held gauge; reads every live acquisition). */
    int heldCount() {
        return registry.countLive(a -> a.state() == LockState.HELD);
    }

    /** Acquisitions of this client waiting now, in the backend's or the JVM-local queue. */
    int waitingCount() {
        return registry.countLive(a -> {
            LockState st = a.state();
            return st == LockState.QUEUED || st == LockState.IDLE;
        });
    }

    String nextAcquisitionId() {
        return idPrefix + "-" + ids.incrementAndGet();
    }

    private static String randomIdPrefix() {
        java.util.UUID u = java.util.UUID.randomUUID(); // SecureRandom, once per client
        // The version and variant bits are fixed: mix the halves so that all 64 bits vary.
        String hex = Long.toHexString(u.getMostSignificantBits() ^ Long.rotateLeft(u.getLeastSignificantBits(), 32));
        return "0".repeat(16 - hex.length()) + hex;
    }

    boolean isOpen() {
        return lifecycle.get() == Lifecycle.OPEN;
    }

    /** Starts an acquisition, through the JVM-local queue where that applies. Never blocks. */
    void begin(Acquisition a) {
        if (a.mode == LockMode.EXCLUSIVE && options.localQueueing()) {
            local.start(a);
        } else {
            a.start();
        }
    }

    private void checkOpen() {
        if (lifecycle.get() != Lifecycle.OPEN) {
            throw closedException();
        }
    }

    private IllegalStateException closedException() {
        return new IllegalStateException(backendName + " client is closed (" + lifecycle.get() + ")");
    }

    Acquisition newAcquisition(
            String name,
            LockMode mode,
            int permits,
            int maxPermits,
            @Nullable Thread owner,
            boolean reentrant,
            @Nullable Duration wait) {
        checkOpen();
        Acquisition a = new Acquisition(this, name, mode, permits, maxPermits, owner, reentrant, wait);
        registry.add(a, Registry.LIVE);
        if (metrics.timesAcquisitions()) {
            long start = ticker.read();
            @Nullable Object started = metrics.acquireStarted(a);
            CompletableFuture<?> unused = a.outcome().whenComplete((x, e) -> {
                if (e != null) {
                    registry.remove(a, Registry.LIVE);
                }
                metrics.acquireEnded(a, ticker.read() - start, e, started);
            });
        } else {
            CompletableFuture<?> unused = a.outcome().whenComplete((x, e) -> {
                if (e != null) {
                    registry.remove(a, Registry.LIVE);
                }
            });
        }
        if (lifecycle.get() != Lifecycle.OPEN) { // closed concurrently: do not leave it behind
            registry.remove(a, Registry.LIVE);
            throw closedException();
        }
        return a;
    }

    @Nullable
    Acquisition heldBy(String name, LockMode mode, Thread thread) {
        return registry.heldBy(name, mode, thread);
    }

    void onGranted(Acquisition a) {
        if (a.owner != null) {
            registry.add(a, Registry.HOLD);
        }
        renewer.track(a);
    }

    /** A lost grant stays registered to its thread until its holds are closed (see Acquisition). */
    void onLost(Acquisition a) {
        registry.remove(a, Registry.LIVE);
    }

    void onEnded(Acquisition a) {
        registry.remove(a, Registry.LIVE | Registry.HOLD);
    }

    ScheduledFuture<?> schedule(Runnable task, long delayNanos) {
        return timer.schedule(task, delayNanos, TimeUnit.NANOSECONDS);
    }

    ScheduledFuture<?> scheduleWithFixedDelay(Runnable task, long periodNanos) {
        return timer.scheduleWithFixedDelay(task, periodNanos, periodNanos, TimeUnit.NANOSECONDS);
    }

    /** Whether the backend reported its connection down and not back yet (SUSPENDED). */
    boolean connectionDown() {
        return suspended.get();
    }

    /**
     * Whether the client knows its connection to the backend is down (suspended and reconnecting), for
     * health checks: a cheap signal that sends nothing.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return true while the backend reported the connection suspended and not yet back
     */
    boolean isConnectionDown() {
        return suspended.get();
    }

    /**
     * The backend's data-loss fence in force, as this client's replies reported it ({@link
     * LockBackend#dataLossFence()}), for health checks and messages.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the fence, or empty when none is known to be in force
     */
    Optional<DataLossFence> dataLossFence() {
        try {
            return backend.dataLossFence();
        } catch (RuntimeException e) {
            return Optional.empty(); // a hint for messages; never worth failing a caller over
        }
    }

    /**
     * The backend's operator view ({@link LockBackend#inspector()}), for tools and tests that act on
     * the server's records directly, such as marking a new deployment.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the inspector, or empty where the backend offers none
     */
    Optional<io.dlock.spi.LockInspector> inspector() {
        return backend.inspector();
    }

    /**
     * Records a request's failure as the latest sign of an outage (see {@link #lastFailure}). An
     * entry that is merely gone ({@link EntryLostException}), bad input and a closed client are no
     * connection error and are not kept.
     */
    void requestFailed(Throwable failure) {
        Throwable f = Acquisition.unwrap(failure);
        if (f instanceof EntryLostException
                || f instanceof IllegalArgumentException
                || f instanceof IllegalStateException) {
            return;
        }
        lastFailure = f;
    }

    /**
     * A request went unanswered for the wait plus connectTimeout ({@code failure} says so): the
     * backend is silent, whether or not its client library noticed.
     */
    void requestUnanswered(Throwable failure) {
        requestFailed(failure);
        long now = ticker.read();
        unansweredAt = now == 0 ? 1 : now;
    }

    /** A request was answered: the connection works, so an older failure no longer explains anything. */
    void requestAnswered() {
        if (lastFailure != null) {
            lastFailure = null;
        }
        if (unansweredAt != 0) {
            unansweredAt = 0;
        }
    }

    /**
     * How long ago ({@link #ticker} nanoseconds) a request went unanswered with nothing answered
     * since, if that was less than connectTimeout ago; -1 otherwise. Within that window a zero-wait
     * attempt is refused at once, as on a connection known down; after it, the next attempt is sent
     * and finds out whether the backend is back.
     */
    long recentlyUnanswered() {
        long at = unansweredAt;
        if (at == 0) {
            return -1;
        }
        long ago = ticker.read() - at;
        return ago < options.connectTimeout().toNanos() ? ago : -1;
    }

    /** The latest request failure since the connection last worked, or null (see {@link #lastFailure}). */
    @Nullable
    Throwable lastFailure() {
        return lastFailure;
    }

    /**
     * Why the connection is down, for a wait it ended: the latest request failure, or else (no
     * request has failed since: the backend's client saw the connection drop first) what the
     * backend reported and when.
     */
    Throwable downCause() {
        Throwable f = lastFailure;
        if (f != null) {
            return f;
        }
        long at = suspendedAt; // 0: read just before the report's time was written
        String ago = at == 0 ? "" : " " + TimeUnit.NANOSECONDS.toMillis(ticker.read() - at) + " ms ago";
        return new java.io.IOException("the " + backendName + " client reported its connection to " + address + " lost"
                + ago + " and has not reconnected since");
    }

    /**
     * The server's address for messages, from the backend's {@code toString()}: the part inside its
     * brackets up to the first {@code ", "} ({@code RedisBackend[redis://h:6379?keyPrefix=p, client
     * 3]} gives {@code redis://h:6379?keyPrefix=p}), with user info removed and password parameters
     * masked, so that no credential reaches a message even from a backend that shows them.
     */
    static String addressOf(LockBackend backend) {
        try {
            return addressOf(String.valueOf(backend.toString()));
        } catch (RuntimeException e) {
            return backend.name();
        }
    }

    /** {@link #addressOf(LockBackend)} of a backend's {@code toString()}. */
    static String addressOf(String backendToString) {
        String s = backendToString;
        int open = s.indexOf('[');
        if (open >= 0 && s.endsWith("]")) {
            s = s.substring(open + 1, s.length() - 1);
            int comma = s.indexOf(", ");
            if (comma >= 0) {
                s = s.substring(0, comma);
            }
        }
        return redact(s);
    }

    /** Removes user info ({@code user:secret@}) and masks {@code password=}/{@code token=} values. */
    static String redact(String s) {
        return s.replaceAll("(?<=//)[^/?#@\\s]*@", "")
                .replaceAll("(?i)((?:password|passwd|pwd|token|secret)=)[^&;,\\s\\]]*", "$1***");
    }

    /** A wait that ended without a grant, naming a data-loss fence if one held it back. */
    LockTimeoutException timedOut(String name, Duration wait) {
        Optional<DataLossFence> fence = dataLossFence();
        return fence.isEmpty()
                ? new LockTimeoutException(name, backendName, wait)
                : new LockTimeoutException(name, backendName, wait, fence.get().describe());
    }

    private void onConnectionState(ConnectionState state) {
        log.debug("[client={}] connection {}", backendName, state);
        switch (state) {
            case SUSPENDED -> {
                // Only the first of repeated SUSPENDED events starts the clock: a client that
                // reports every failed reconnect must not postpone the loss for ever.
                if (!suspended.compareAndSet(false, true)) {
                    return;
                }
                suspendedAt = ticker.read();
                long epoch = suspension.incrementAndGet();
                Duration bound = backend.maxSuspension();
                try {
                    ScheduledFuture<?> unused = timer.schedule(
                            () -> {
                                if (suspended.get() && suspension.get() == epoch) {
                                    loseAll(
                                            LockMetrics.LossCause.SUSPENDED,
                                            "connection suspended for longer than " + bound);
                                }
                            },
                            bound.toNanos(),
                            TimeUnit.NANOSECONDS);
                } catch (java.util.concurrent.RejectedExecutionException e) {
                    // closing
                }
            }
            case CONNECTED, RECONNECTED -> {
                lastFailure = null;
                unansweredAt = 0;
                suspended.set(false);
                suspension.incrementAndGet();
            }
            case LOST -> {
                suspended.set(false);
                suspension.incrementAndGet();
                loseAll(LockMetrics.LossCause.SESSION, "session lost");
            }
        }
    }

    /**
     * The server told the backend that an operator removed {@code entry} ({@code dlock release
     * --force}): the lease holding it is lost now, through the same path as a renewal that found the
     * grant gone (listeners once, metrics, local waiters). A grant held by a local hand-off carries
     * the same entry, so the current holder of the entry is found whichever waiter it is.
     */
    private void onForcedRelease(QueueEntry entry) {
        registry.forEachLive(entry.lockName(), a -> {
            if (a.state() == LockState.HELD && a.entry().key().equals(entry.key())) {
                a.lose(
                        LockMetrics.LossCause.FORCED,
                        "released by force: another client removed this grant on the server (an operator's dlock release"
                                + " --force, or a key deleted by hand),"
                                + " so the next waiter may hold the lock now",
                        new EntryLostException(entry, "released by force"));
            }
        });
    }

    private void onStall(Duration stalled) {
        loseAll(
                LockMetrics.LossCause.STALL,
                "the JVM stalled for " + stalled.toMillis() + " ms (GC pause or process pause), longer than "
                        + backend.maxSuspension().toMillis() + " ms: the server may have expired the session");
    }

    /**
     * Sends the removal of an entry, counted while in flight: {@link #close} waits for the ones
     * other threads started (a lease closed on a worker while the application shuts the client
     * down) before it disconnects, which would cut them off and leave their entries to expire.
     */
    CompletableFuture<Void> sendRelease(QueueEntry entry, boolean callerWaits) {
        releasesInFlight.incrementAndGet();
        CompletableFuture<Void> sent;
        try {
            sent = protocol.release(entry, callerWaits).toCompletableFuture();
        } catch (RuntimeException | Error e) {
            releaseEnded();
            throw e;
        }
        return sent.whenComplete((ok, err) -> releaseEnded());
    }

    private void releaseEnded() {
        if (releasesInFlight.decrementAndGet() == 0 && lifecycle.get() != Lifecycle.OPEN) {
            synchronized (releasesInFlight) {
                releasesInFlight.notifyAll();
            }
        }
    }

    /** Waits until no release is in flight, or {@code deadline} (System.nanoTime). */
    private void awaitReleases(long deadline) throws InterruptedException {
        synchronized (releasesInFlight) {
            long left;
            while (releasesInFlight.get() > 0 && (left = deadline - System.nanoTime()) > 0) {
                TimeUnit.NANOSECONDS.timedWait(releasesInFlight, left);
            }
        }
    }

    Loss lastLoss() {
        return Objects.requireNonNull(lastLoss.get()); // set at construction, never to null
    }

    private void loseAll(LockMetrics.LossCause why, String reason) {
        // Counted before the scan: a grant moving to HELD behind the scan sees the count move.
        lastLoss.updateAndGet(l -> new Loss(l.epoch() + 1, why, reason));
        for (Acquisition a : registry.live()) {
            if (a.state() == LockState.HELD) {
                a.lose(why, reason, null);
            }
        }
    }

    private static ThreadFactory daemonThreads(String prefix) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, prefix + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    @Override
    public String toString() {
        return "LockClient[" + backendName + ", " + lifecycle.get() + ", " + registry.liveCount() + " live]";
    }
}
