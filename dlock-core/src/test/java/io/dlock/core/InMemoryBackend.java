package io.dlock.core;

import io.dlock.Capability;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.Ticker;
import io.dlock.spi.ConnectionState;
import io.dlock.spi.EntryLostException;
import io.dlock.spi.Grant;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockProtocol;
import io.dlock.spi.LockRequest;
import io.dlock.spi.Position;
import io.dlock.spi.QueueEntry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * A small, correct, thread-safe in-memory backend for engine tests: not a mock, but a real FIFO
 * queue per lock name on a shared {@link Server}, with predecessor-only wake-ups and a global fencing
 * counter. Several clients talk to one server through one {@code InMemoryBackend} (a "connection",
 * with its own session id) each.
 *
 * <p>Concurrency: the server's queues are guarded by the server's monitor; every reply completes
 * asynchronously on a small shared executor, as a network client's would, and never under the
 * monitor.
 *
 * <p>Test controls: {@link #emit}, {@link #maxSuspension(Duration)}, the counters, {@link #queue},
 * {@link #failNextEnqueue}, {@link #holdEnqueueReplies} / {@link #deliverHeldReplies}, {@link
 * #holdReleases} / {@link #deliverHeldReleases}.
 */
final class InMemoryBackend implements LockBackend, LockProtocol {

    /** Where the enqueue of {@link #failNextEnqueue} fails: before or after the entry is created. */
    enum FailMode {
        /** The request never reached the server: no entry is created. */
        BEFORE_APPLY,
        /** The server created the entry but the reply was lost: the engine must find and remove it. */
        AFTER_APPLY
    }

    static final Set<Capability> DEFAULT_CAPABILITIES = Set.copyOf(EnumSet.of(
            Capability.EXCLUSIVE,
            Capability.FAIR,
            Capability.FENCING_TOKENS,
            Capability.LOST_DETECTION,
            Capability.CRASH_RELEASE,
            Capability.NO_HERD));

    private static final ExecutorService REPLIES = Executors.newFixedThreadPool(2, r -> {
        Thread t = new Thread(r, "inmemory-backend-reply");
        t.setDaemon(true);
        return t;
    });

    /** The shared "server": queues by lock name, the fencing counter and the counters. */
    static final class Server {
        private final Object lock = new Object();
        private final Map<String, List<Slot>> queues = new HashMap<>(); // guarded by lock
        private final AtomicLong tokens = new AtomicLong();
        private final AtomicLong keys = new AtomicLong();
        private final AtomicLong sessions = new AtomicLong();
        final AtomicInteger enqueues = new AtomicInteger();
        final AtomicInteger releases = new AtomicInteger();
        final AtomicInteger wakeUps = new AtomicInteger();
        final AtomicInteger renewals = new AtomicInteger();
        /** Lifetime of grants: validUntil = ticker + lifetime; null for session-bound grants. */
        private volatile Ticker grantTicker;

        private volatile Duration grantLifetime;

        InMemoryBackend connect() {
            return connect(DEFAULT_CAPABILITIES);
        }

        InMemoryBackend connect(Set<Capability> capabilities) {
            return new InMemoryBackend(this, sessions.incrementAndGet(), capabilities);
        }

        /** Makes grants expire {@code lifetime} after they are made, as read by {@code ticker}. */
        void grantLifetime(Ticker ticker, Duration lifetime) {
            this.grantTicker = ticker;
            this.grantLifetime = lifetime;
        }

        List<QueueEntry> queue(String name) {
            synchronized (lock) {
                List<QueueEntry> out = new ArrayList<>();
                for (Slot s : queues.getOrDefault(name, List.of())) {
                    out.add(s.entry);
                }
                return out;
            }
        }

        int totalEntries() {
            synchronized (lock) {
                int n = 0;
                for (List<Slot> q : queues.values()) {
                    n += q.size();
                }
                return n;
            }
        }

        private Grant grantOf(QueueEntry e) {
            Ticker t = grantTicker;
            Duration d = grantLifetime;
            long until = t == null ? Long.MAX_VALUE : t.read() + d.toNanos();
            return new Grant(e, e.token(), until);
        }

        /** The entry's position; the caller holds {@code lock}. */
        private Position positionOf(List<Slot> q, int index) {
            Slot s = q.get(index);
            return index == 0
                    ? Position.granted(grantOf(s.entry))
                    : Position.waiting(s.entry, q.get(index - 1).entry.key());
        }

        private static int indexOf(List<Slot> q, String key) {
            for (int i = 0; i < q.size(); i++) {
                if (q.get(i).entry.key().equals(key)) {
                    return i;
                }
            }
            return -1;
        }

        Position enqueue(String name, String acquisitionId, long session) {
            synchronized (lock) {
                List<Slot> q = queues.computeIfAbsent(name, n -> new ArrayList<>());
                for (int i = 0; i < q.size(); i++) { // idempotent per acquisition id
                    if (q.get(i).entry.acquisitionId().equals(acquisitionId)) {
                        return positionOf(q, i);
                    }
                }
                enqueues.incrementAndGet();
                long token = tokens.incrementAndGet();
                QueueEntry e = new QueueEntry(name, acquisitionId, name + "/" + keys.incrementAndGet(), session, token);
                q.add(new Slot(e));
                return positionOf(q, q.size() - 1);
            }
        }

        /**
         * Registers a wake-up for {@code waiting}; completes at once if its predecessor is gone.
         * Returns the completion to run outside the monitor, or null if registered.
         */
        Runnable awaitTurn(Position waiting, CompletableFuture<Position> turn) {
            QueueEntry e = waiting.entry();
            synchronized (lock) {
                List<Slot> q = queues.getOrDefault(e.lockName(), List.of());
                int i = indexOf(q, e.key());
                if (i < 0) {
                    return () -> turn.completeExceptionally(new EntryLostException(e, "not in the queue"));
                }
                if (indexOf(q, waiting.predecessor()) < 0) {
                    Position p = positionOf(q, i);
                    return () -> turn.complete(p);
                }
                Slot s = q.get(i);
                if (s.turn != null) {
                    throw new IllegalStateException("awaitTurn twice for " + e.key());
                }
                s.turn = turn;
                return null;
            }
        }

        /** Removes the entry and wakes only its successor. Returns the completions to run. */
        List<Runnable> remove(QueueEntry e) {
            List<Runnable> after = new ArrayList<>();
            synchronized (lock) {
                List<Slot> q = queues.get(e.lockName());
                int i = q == null ? -1 : indexOf(q, e.key());
                if (i < 0) {
                    return after; // a missing entry counts as removed
                }
                releases.incrementAndGet();
                Slot gone = q.remove(i);
                if (gone.turn != null) {
                    CompletableFuture<Position> own = gone.turn;
                    after.add(() -> own.completeExceptionally(new EntryLostException(e, "removed")));
                }
                if (i < q.size()) {
                    Slot successor = q.get(i);
                    if (successor.turn != null) {
                        CompletableFuture<Position> turn = successor.turn;
                        successor.turn = null;
                        Position p = positionOf(q, i);
                        wakeUps.incrementAndGet();
                        after.add(() -> turn.complete(p));
                    }
                }
                if (q.isEmpty()) {
                    queues.remove(e.lockName());
                }
            }
            return after;
        }

        /** A fresh grant for an entry that still holds its lock; EntryLostException otherwise. */
        Grant renew(QueueEntry e) {
            synchronized (lock) {
                List<Slot> q = queues.getOrDefault(e.lockName(), List.of());
                if (indexOf(q, e.key()) != 0) {
                    throw new EntryLostException(e, "no longer holds the lock");
                }
                renewals.incrementAndGet();
                return grantOf(e);
            }
        }

        Optional<QueueEntry> find(String name, String acquisitionId, long session) {
            synchronized (lock) {
                for (Slot s : queues.getOrDefault(name, List.of())) {
                    if (s.entry.acquisitionId().equals(acquisitionId) && s.entry.session() == session) {
                        return Optional.of(s.entry);
                    }
                }
                return Optional.empty();
            }
        }

        List<QueueEntry> entriesOf(long session) {
            synchronized (lock) {
                List<QueueEntry> out = new ArrayList<>();
                for (List<Slot> q : queues.values()) {
                    for (Slot s : q) {
                        if (s.entry.session() == session) {
                            out.add(s.entry);
                        }
                    }
                }
                return out;
            }
        }
    }

    private static final class Slot {
        final QueueEntry entry;
        CompletableFuture<Position> turn; // guarded by Server.lock

        Slot(QueueEntry entry) {
            this.entry = entry;
        }
    }

    final Server server;
    private final long session;
    private final Set<Capability> capabilities;
    private volatile Duration maxSuspension = Duration.ofMinutes(1);
    private final AtomicReference<Consumer<ConnectionState>> listener = new AtomicReference<>();
    private final AtomicReference<FailMode> failNextEnqueue = new AtomicReference<>();
    private final HoldBack enqueueReplies = new HoldBack();
    private final HoldBack releases = new HoldBack();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicBoolean failRenewals = new AtomicBoolean();
    private final AtomicInteger failLookups = new AtomicInteger();
    private final AtomicInteger lookups = new AtomicInteger();

    private InMemoryBackend(Server server, long session, Set<Capability> capabilities) {
        this.server = server;
        this.session = session;
        this.capabilities = Set.copyOf(capabilities);
    }

    /** A backend on a server of its own. */
    static InMemoryBackend create() {
        return new Server().connect();
    }

    /** An engine client over {@code backend} with default options. */
    static LockClient client(InMemoryBackend backend) {
        return LockEngine.newClient(backend, LockOptions.defaults());
    }

    // ---- test controls

    /** Pushes a connection state to the engine's listener, on the calling thread. */
    void emit(ConnectionState state) {
        Consumer<ConnectionState> l = listener.get();
        if (l == null) {
            throw new IllegalStateException("no engine listener registered");
        }
        l.accept(state);
    }

    InMemoryBackend maxSuspension(Duration maxSuspension) {
        this.maxSuspension = maxSuspension;
        return this;
    }

    int enqueues() {
        return server.enqueues.get();
    }

    int releases() {
        return server.releases.get();
    }

    int wakeUps() {
        return server.wakeUps.get();
    }

    /** A snapshot of the queue of {@code name}, head (the holder) first. */
    List<QueueEntry> queue(String name) {
        return server.queue(name);
    }

    /** Makes the next enqueue fail with {@link LockBackendException}. */
    void failNextEnqueue(FailMode mode) {
        failNextEnqueue.set(mode);
    }

    /** While on, enqueue requests are applied on the server but their replies are held back. */
    void holdEnqueueReplies(boolean hold) {
        enqueueReplies.hold.set(hold);
    }

    int heldReplies() {
        return enqueueReplies.count();
    }

    /** Delivers the replies held back so far (asynchronously, in order). */
    void deliverHeldReplies() {
        enqueueReplies.release();
    }

    /** While on, release requests are held back before the server applies them (in flight). */
    void holdReleases(boolean hold) {
        releases.hold.set(hold);
    }

    int heldReleases() {
        return releases.count();
    }

    /** Applies the releases held back so far (asynchronously, in order). */
    void deliverHeldReleases() {
        releases.release();
    }

    /** Tasks a test holds back while {@link #hold} is on, and lets go of in order. */
    private static final class HoldBack {
        final AtomicBoolean hold = new AtomicBoolean();
        private final List<Runnable> held = new ArrayList<>(); // guarded by itself

        /** Keeps {@code task} if holding; false (the caller runs it) otherwise. */
        boolean keep(Runnable task) {
            if (!hold.get()) {
                return false;
            }
            synchronized (held) {
                held.add(task);
            }
            return true;
        }

        int count() {
            synchronized (held) {
                return held.size();
            }
        }

        void release() {
            List<Runnable> out;
            synchronized (held) {
                out = new ArrayList<>(held);
                held.clear();
            }
            out.forEach(REPLIES::execute);
        }
    }

    /** Removes an entry on the server's own account (its session expired), waking its successor. */
    void expire(QueueEntry entry) {
        server.remove(entry).forEach(REPLIES::execute);
    }

    /** Makes the next {@code n} lookups of {@link #findOwnEntry} fail as if the server were unreachable. */
    void failLookups(int n) {
        failLookups.set(n);
    }

    int lookups() {
        return lookups.get();
    }

    /** While on, renewals fail as if the server were unreachable. */
    void failRenewals(boolean fail) {
        failRenewals.set(fail);
    }

    boolean isClosed() {
        return closed.get();
    }

    // ---- LockBackend

    @Override
    public String name() {
        return "inmemory";
    }

    @Override
    public Set<Capability> capabilities() {
        return capabilities;
    }

    @Override
    public LockProtocol protocol() {
        return this;
    }

    @Override
    public void onConnectionState(Consumer<ConnectionState> listener) {
        if (!this.listener.compareAndSet(null, listener)) {
            throw new IllegalStateException("onConnectionState called twice");
        }
    }

    @Override
    public Duration maxSuspension() {
        return maxSuspension;
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            for (QueueEntry e : server.entriesOf(session)) { // the server drops the session's entries
                server.remove(e).forEach(REPLIES::execute);
            }
        }
    }

    // ---- LockProtocol

    /** What the engine said of its caller on each enqueue and release, in order ("enqueue true", ...). */
    final List<String> callerWaits = new java.util.concurrent.CopyOnWriteArrayList<>();

    @Override
    public CompletionStage<Position> enqueue(LockRequest request, boolean callerWaits) {
        this.callerWaits.add(
                "enqueue " + callerWaits + " " + Thread.currentThread().getName());
        return enqueue(request);
    }

    @Override
    public CompletionStage<Void> release(QueueEntry entry, boolean callerWaits) {
        this.callerWaits.add(
                "release " + callerWaits + " " + Thread.currentThread().getName());
        return release(entry);
    }

    @Override
    public CompletionStage<Position> enqueue(LockRequest request) {
        if (request.mode() != LockMode.EXCLUSIVE && !capabilities.contains(Capability.READ_WRITE)) {
            throw new UnsupportedOperationException("the in-memory backend queues exclusive locks only");
        }
        // With READ_WRITE, reads and writes queue as exclusive entries too: enough for the engine's
        // own checks of its read-write locks; shared reads are the real backends' tests.
        String lockName = request.lockName();
        String acquisitionId = request.acquisitionId();
        CompletableFuture<Position> reply = new CompletableFuture<>();
        REPLIES.execute(() -> {
            FailMode fail = failNextEnqueue.getAndSet(null);
            if (fail == FailMode.BEFORE_APPLY) {
                reply.completeExceptionally(failure(lockName, "enqueue refused (test)"));
                return;
            }
            Position p;
            try {
                p = server.enqueue(lockName, acquisitionId, session);
            } catch (RuntimeException e) {
                reply.completeExceptionally(e);
                return;
            }
            Runnable deliver = fail == FailMode.AFTER_APPLY
                    ? () -> reply.completeExceptionally(failure(lockName, "enqueue reply lost (test)"))
                    : () -> reply.complete(p);
            if (!enqueueReplies.keep(deliver)) {
                deliver.run();
            }
        });
        return reply;
    }

    @Override
    public CompletionStage<Position> awaitTurn(Position waiting) {
        CompletableFuture<Position> turn = new CompletableFuture<>();
        REPLIES.execute(() -> {
            Runnable now = server.awaitTurn(waiting, turn);
            if (now != null) {
                now.run();
            }
        });
        return turn;
    }

    @Override
    public CompletionStage<Void> release(QueueEntry entry) {
        CompletableFuture<Void> reply = new CompletableFuture<>();
        Runnable apply = () -> {
            List<Runnable> after = server.remove(entry);
            reply.complete(null);
            after.forEach(REPLIES::execute);
        };
        if (!releases.keep(apply)) {
            REPLIES.execute(apply);
        }
        return reply;
    }

    @Override
    public CompletionStage<Optional<QueueEntry>> findOwnEntry(String lockName, String acquisitionId) {
        return CompletableFuture.supplyAsync(
                () -> {
                    lookups.incrementAndGet();
                    if (failLookups.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
                        throw failure(lockName, "lookup failed (test)");
                    }
                    return server.find(lockName, acquisitionId, session);
                },
                REPLIES);
    }

    @Override
    public CompletionStage<Grant> renew(Grant grant) {
        return CompletableFuture.supplyAsync(
                () -> {
                    if (failRenewals.get()) {
                        throw failure(grant.entry().lockName(), "renewal refused (test)");
                    }
                    return server.renew(grant.entry());
                },
                REPLIES);
    }

    private LockBackendException failure(String lockName, String detail) {
        return new LockBackendException(lockName, name(), detail, null);
    }

    @Override
    public String toString() {
        return "InMemoryBackend[inmemory://server/session-" + session + ", test]";
    }
}
