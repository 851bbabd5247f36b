package io.dlock.memcached;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.dlock.LockBackendException;
import io.dlock.Ticker;
import io.dlock.memcached.MemcachedBackend.Server;
import io.dlock.memcached.MetaConnection.Command;
import io.dlock.memcached.MetaConnection.MemcachedIoException;
import io.dlock.memcached.MetaConnection.Reply;
import io.dlock.spi.EntryLostException;
import io.dlock.spi.Grant;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockProtocol;
import io.dlock.spi.LockRequest;
import io.dlock.spi.Position;
import io.dlock.spi.QueueEntry;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntFunction;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The exclusive lock on memcached: Seed 001's {@code add} lock with its holes closed.
 *
 * <p>Keys (all under the URI's {@code keyPrefix}): {@code p:l:<name>}, the lock, holding {@code
 * "<acquisition id> <client id>"} with an expiry a little over the lease time; {@code p:t:<name>},
 * the fencing counter; {@code p:w:<name>:<id>}, one per waiting acquisition (so that waiters can be
 * seen and cleaned up; memcached has no queue), with the same expiry, refreshed at each poll; {@code
 * p:g:<name>}, the grant record: the acquisition id, token and time of a grant still held {@link
 * #RECORD_DELAY_NANOS} after it was made (not waited for; shorter grants write none), for {@code
 * dlock inspect} until the first renewal writes them into the lock key (see {@link
 * MemcachedInspector}).
 *
 * <p>Acquire: one pipeline of three commands on the name's server, answered in order: read the
 * boot marker ({@link DataLossGuard}); {@code ms <lock> ME} (an {@code add}) returning the item's
 * CAS value; {@code ma <counter> N J<floor> T} (increment, created at the floor when missing). A
 * grant needs the marker to be present and out of quarantine; otherwise a landed {@code add} is
 * undone with {@code md <lock> C<cas>} before the acquire reports anything. The counter is bumped in
 * the same pipeline right after the {@code add}, so grant order and token order agree (a failed
 * {@code add} also bumps it: tokens leave gaps, never go down).
 *
 * <p>Ownership: the CAS value memcached gave our {@code add} identifies our item. Release is {@code
 * md <lock> C<cas>}, renewal {@code ms <lock> C<cas> T<ttl>}: a holder whose key expired and was
 * taken by someone else gets {@code EX} and touches nothing. CAS values restart after a memcached
 * restart, so a remembered CAS is used only on the connection it was read on (a restart breaks it);
 * on a newer connection the key is first read back ({@code mg <lock> v c}) and its value compared
 * with our acquisition id.
 *
 * <p>Fencing floor: the counter is created at {@code max(server clock in seconds x 10^6, this
 * client's last token for the name + 1)}, and a token not above this client's last one for the
 * name is raised with {@code ma D}. Tokens rise as long as the server clock does not step back and
 * a name takes fewer than a million grants per second on average over its counter's life.
 *
 * <p>Lost replies: an attempt whose reply was lost may have added the key. Every poll, and an
 * acquire's retry after such a loss, reads the key in the same pipeline and takes a key holding its
 * own acquisition id as its grant (see {@link #attempt}), instead of waiting for its own key to
 * expire. Deletes (release, withdrawal, cleanup after a loss) are retried through connection drops
 * until they are answered or the key has expired anyway (see {@link Removal}).
 *
 * <p>Waiting: memcached cannot wake anyone, so a waiter polls with bounded, jittered exponential
 * back-off on the backend's single timer thread (one poller per client); a release by this client
 * wakes its own waiters of that name at once.
 *
 * <p>Concurrency: each waiter's state is guarded by its monitor, held only for bookkeeping and for
 * handing a poll to the connection (never across a reply), so that a release's commands always
 * follow a poll's on the wire. At most one poll per waiter is in flight.
 */
final class MemcachedLockProtocol implements LockProtocol {
    private static final Logger log = LoggerFactory.getLogger(MemcachedLockProtocol.class);

    static final String ANY = "*";
    static final long COUNTER_TTL_SECONDS = 7L * 24 * 3600;
    static final long MIN_POLL_MS = 5;
    static final int LAST_TOKENS = 10_000;
    /**
     * How long a grant must be held before its grant record is written (see {@link #recordLater}):
     * a grant released sooner never writes one.
     */
    static final long RECORD_DELAY_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    private final MemcachedBackend backend;
    private final Ticker ticker;
    private final long leaseNanos;
    private final long marginNanos;
    private final long ttlSeconds;
    private final long maxPollMs;
    private final String prefix;
    private final Map<String, Waiter> waiters = new ConcurrentHashMap<>();
    /** Our grants by acquisition id: the CAS of our item and the connection it was read on. */
    private final Map<String, Held> held = new ConcurrentHashMap<>();
    /** Grants whose record is not written yet, oldest first (see {@link #recordLater}). */
    private final ConcurrentLinkedQueue<PendingRecord> pendingRecords = new ConcurrentLinkedQueue<>();

    private final AtomicBoolean sweepScheduled = new AtomicBoolean();

    @GuardedBy("lastTokens")
    private final Map<String, Long> lastTokens = new LinkedHashMap<>(16, 0.75f, true) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Long> eldest) {
            return size() > LAST_TOKENS;
        }
    };

    /**
     * Our grant's item: its CAS, the connection it was read on, when it was granted (wall clock, for
     * display) and when its TTL was last set (the ticker, read before the write was sent).
     */
    record Held(Server server, long generation, long cas, long sinceMillis, long writtenAtNanos) {}

    /** One attempt's result. */
    private record Attempt(@Nullable Grant grant, long retryMs) {}

    MemcachedLockProtocol(MemcachedBackend backend) {
        this.backend = backend;
        this.ticker = backend.options.ticker();
        this.leaseNanos = backend.options.leaseTime().toNanos();
        this.marginNanos = leaseNanos / 100 + TimeUnit.MILLISECONDS.toNanos(2);
        // Memcached's clock ticks once a second, so an item may expire up to a second early: one more.
        this.ttlSeconds = MemcachedBackend.ceilSeconds(backend.options.leaseTime()) + 1;
        this.maxPollMs = Math.max(20, Math.min(200, backend.options.leaseTime().toMillis() / 20));
        this.prefix = backend.uri.keyPrefix();
    }

    // ---- keys

    String lockKey(String name) {
        return prefix + ":l:" + name;
    }

    /** The grant record: {@code "<acquisition id> <token> <grant time ms>"}, for {@code dlock inspect}. */
    String grantKey(String name) {
        return prefix + ":g:" + name;
    }

    String counterKey(String name) {
        return prefix + ":t:" + name;
    }

    String waiterKey(String name, String acquisitionId) {
        return prefix + ":w:" + name + ":" + Long.toString(acquisitionId.hashCode() & 0xffffffffL, 36)
                + Integer.toString(acquisitionId.length(), 36) + shortTail(acquisitionId);
    }

    private static String shortTail(String id) {
        return id.length() <= 8 ? id : id.substring(id.length() - 8);
    }

    private String ownerValue(QueueEntry entry) {
        return entry.acquisitionId() + " " + backend.clientId;
    }

    /**
     * The value a renewal writes: the owner, then the fencing token and the grant time for {@code
     * dlock inspect}. Only renewals rewrite the key, so the acquire sends none of it.
     */
    private String renewedValue(QueueEntry entry, long token, long sinceMillis) {
        return ownerValue(entry) + " " + token + " " + sinceMillis;
    }

    private static boolean ours(Reply r, QueueEntry entry) {
        return r.status().equals("VA") && r.value() != null && r.value().startsWith(entry.acquisitionId() + " ");
    }

    // ---- acquire

    @Override
    public CompletionStage<Position> enqueue(LockRequest request) {
        if (request.mode() != LockMode.EXCLUSIVE) {
            return CompletableFuture.failedFuture(
                    new UnsupportedOperationException(request.mode() + " is not available on memcached"));
        }
        String name = request.lockName();
        QueueEntry entry =
                new QueueEntry(name, request.acquisitionId(), lockKey(name) + "#" + request.acquisitionId(), 0, 0);
        CompletableFuture<Position> result = new CompletableFuture<>();
        enqueue(entry, result, 0, false);
        return result;
    }

    /*
     * The engine learns of an entry only from the position this reports, so nothing can withdraw it
     * while this runs: a waiter's bookkeeping (a Waiter in `waiters`) is made only once the first
     * attempt found the lock taken, which keeps it off the uncontended path.
     */
    private void enqueue(QueueEntry entry, CompletableFuture<Position> result, int attempt, boolean checkOwn) {
        if (backend.isClosed()) {
            result.completeExceptionally(new LockBackendException(
                    entry.lockName(), MemcachedBackend.NAME, "acquire failed: the client is closed", null));
            return;
        }
        // The first attempt comes from the acquiring thread, which waits for its outcome: it reads the
        // reply itself. Retries run on the timer thread, which must not wait.
        attempt(entry, 0, attempt == 0, checkOwn).whenComplete((r, error) -> {
            if (error != null) {
                Throwable cause = unwrap(error);
                // Sent, but the connection closed before the reply: the add may have landed. The
                // next attempt reads the key too and takes it if it holds this acquisition's id.
                boolean unknown = cause instanceof MemcachedIoException && !notSent(cause);
                if ((notSent(cause) || unknown)
                        && attempt < backend.options.retryPolicy().maxRetries()
                        && !backend.isClosed()
                        && backend.serverFor(entry.lockName()).mayReconnectSoon()
                        && backend.schedule(
                                        () -> enqueue(entry, result, attempt + 1, checkOwn || unknown),
                                        backoffMs(attempt))
                                != null) {
                    return; // trying again cannot make a second entry: our own key is found and taken
                }
                result.completeExceptionally(failure(entry.lockName(), "acquire", cause));
            } else if (r.grant != null) {
                result.complete(Position.granted(r.grant));
            } else {
                // Waiting: make the waiter visible on the server first, then report the position.
                Waiter w = new Waiter(entry);
                waiters.put(entry.key(), w);
                Server server = backend.serverFor(entry.lockName());
                server.send(List.of(writeWaiter(entry, w.sinceMillis))).whenComplete((x, e) -> {
                    synchronized (w) {
                        w.nextDelayMs = r.retryMs;
                        w.waiterKeyWritten = e == null;
                    }
                    result.complete(Position.waiting(entry, ANY));
                });
            }
        });
    }

    /**
     * The waiter key: this client's id, when the wait began and the acquisition (for {@code dlock
     * inspect}: the order, and a granted waiter whose key is not yet deleted is not shown twice).
     */
    private Command writeWaiter(QueueEntry entry, long sinceMillis) {
        String v = backend.clientId + " " + sinceMillis + " " + entry.acquisitionId();
        return Command.set(waiterKey(entry.lockName(), entry.acquisitionId()), v, "T" + ttlSeconds);
    }

    /**
     * One acquire attempt: marker, add, counter in one pipeline (plus, with {@code checkOwn}, a read
     * of the lock key, and the waiter key's refresh while waiting). Completes with a grant, or with
     * how long to wait before the next attempt. A landed add that may not count (marker missing or
     * quarantined) is undone first.
     *
     * <p>Own key: an earlier attempt of this acquisition whose reply was lost may have added the key,
     * so that this attempt's add finds it taken (NS) by itself. With {@code checkOwn} (every poll, and
     * an acquire's retry after such a failure), the read that follows the add in the pipeline shows
     * whose it is; if it holds this acquisition's id, it is taken as this attempt's grant, exactly as
     * a landed add would be: the same checks, and its TTL set afresh with a CAS-checked rewrite before
     * the grant is reported (its age is unknown). The token is the counter this pipeline bumped:
     * right after an add that found our item, and before a read that found it still there, so within
     * our item's life, after every earlier grant's token and before every later one's.
     */
    private CompletableFuture<Attempt> attempt(QueueEntry entry, long waitingSince, boolean assist, boolean checkOwn) {
        String name = entry.lockName();
        Server server = backend.serverFor(name);
        long floor = Math.max(server.estimatedSeconds() * 1_000_000L, lastToken(name) + 1);
        String value = ownerValue(entry);
        List<Command> commands = new ArrayList<>(4);
        commands.add(DataLossGuard.read());
        commands.add(Command.set(lockKey(name), value, "ME T" + ttlSeconds + " c"));
        commands.add(Command.of("ma " + counterKey(name) + " N" + COUNTER_TTL_SECONDS + " J" + floor + " T"
                + COUNTER_TTL_SECONDS + " v"));
        if (checkOwn) {
            commands.add(Command.of("mg " + lockKey(name) + " v c"));
        }
        if (waitingSince > 0) {
            commands.add(writeWaiter(entry, waitingSince));
        }
        long generation = server.generation();
        long t0 = ticker.read();
        return server.send(commands, assist).thenCompose(replies -> {
            Reply add = replies.get(1);
            if (add.isError()) {
                throw new CompletionException(refused(name, "add", add));
            }
            boolean landed = add.status().equals("HD");
            @Nullable Reply mine = checkOwn ? replies.get(3) : null;
            // Not added now, but added by an earlier attempt whose reply was lost (see above).
            boolean adopted = !landed && mine != null && add.status().equals("NS") && ours(mine, entry);
            boolean added = landed || adopted;
            long cas = landed ? add.flagLong('c') : adopted && mine != null ? mine.flagLong('c') : 0;
            DataLossGuard.Verdict verdict;
            try {
                verdict = DataLossGuard.judge(replies.get(0));
            } catch (RuntimeException e) {
                return undo(server, name, added, cas).thenApply(x -> {
                    throw new CompletionException(
                            new LockBackendException(name, MemcachedBackend.NAME, String.valueOf(e.getMessage()), e));
                });
            }
            server.sawClock(verdict.serverSeconds());
            if (verdict.state() == DataLossGuard.State.MISSING) {
                return undo(server, name, added, cas)
                        .thenCompose(x -> server.startQuarantine())
                        .thenApply(
                                x -> new Attempt(null, backend.guard.quarantineSecondsWithSlack() * 1000 + jitter()));
            }
            if (verdict.state() == DataLossGuard.State.QUARANTINED) {
                backend.fences.noticed(
                        "memcached at " + server.label,
                        verdict.secondsLeft() * 1000,
                        "its boot marker says it lost its data (restart, flush or eviction) or is new, less than"
                                + " the quarantine ago");
                server.watchQuarantine(); // kicks this client's waiters as soon as it ends
                return undo(server, name, added, cas)
                        .thenApply(x -> new Attempt(null, verdict.secondsLeft() * 1000 + jitter()));
            }
            if (!added) {
                return CompletableFuture.completedFuture(new Attempt(null, -1));
            }
            Reply counter = replies.get(2);
            if (!counter.status().equals("VA")) {
                return undo(server, name, true, cas).thenApply(x -> {
                    throw new CompletionException(refused(name, "fencing counter", counter));
                });
            }
            long token = Long.parseLong(java.util.Objects.requireNonNull(counter.value(), "VA without a value")
                    .trim());
            // The counter must be above every token of an earlier server life. Attempts during a
            // quarantine create it (the ma is in the same pipeline as the marker read) at the clock of the
            // restart, which may be the very second the old counter began: so a grant also raises it to
            // the quarantine's end x 10^6, past the old life's tokens (assumption (b), README).
            long atLeast = Math.max(lastToken(name) + 1, verdict.quarantineEnd() * 1_000_000L);
            CompletableFuture<Long> fenced = token >= atLeast
                    ? CompletableFuture.completedFuture(token)
                    : raiseCounter(server, name, token, atLeast - 1);
            if (adopted) {
                return fenced.thenCompose(t -> adopt(server, entry, generation, cas, t));
            }
            return fenced.thenApply(t -> granted(server, entry, generation, cas, t, t0));
        });
    }

    /** Records a grant of our item {@code cas}, whose TTL was set at {@code writtenAt} (ticker). */
    private Attempt granted(Server server, QueueEntry entry, long generation, long cas, long token, long writtenAt) {
        String name = entry.lockName();
        noteToken(name, token);
        long now = System.currentTimeMillis();
        held.put(entry.acquisitionId(), new Held(server, generation, cas, now, writtenAt));
        recordLater(new PendingRecord(name, entry.acquisitionId(), token, now, ticker.read() + RECORD_DELAY_NANOS));
        return new Attempt(new Grant(entry, token, writtenAt + leaseNanos - marginNanos), -1);
    }

    /**
     * Takes our own item, found by an attempt (see {@link #attempt}), as the grant: rewritten with
     * its CAS (so only if it is still ours) and a fresh TTL; if it changed meanwhile, not granted.
     */
    private CompletableFuture<Attempt> adopt(Server server, QueueEntry entry, long generation, long cas, long token) {
        String name = entry.lockName();
        String value = ownerValue(entry);
        long t1 = ticker.read();
        return server.send(List.of(Command.set(lockKey(name), value, "C" + cas + " T" + ttlSeconds + " c")))
                .thenApply(r -> {
                    Reply rewritten = r.get(0);
                    if (rewritten.isError()) {
                        throw new CompletionException(refused(name, "add", rewritten));
                    }
                    if (!rewritten.status().equals("HD")) {
                        return new Attempt(null, -1); // expired or taken since the read: not ours any more
                    }
                    log.debug(
                            "[lock={} state=QUEUED] found its own key, added by an attempt whose reply was lost;"
                                    + " taking it as the grant (token {})",
                            name,
                            token);
                    return granted(server, entry, generation, rewritten.flagLong('c'), token, t1);
                });
    }

    /**
     * The counter is below a token this client saw (recreated: evicted?) or below the last data
     * loss's floor (recreated during the quarantine): raise it past {@code last}.
     */
    private CompletableFuture<Long> raiseCounter(Server server, String name, long token, long last) {
        log.info("[lock={}] fencing counter gave {}, not above {}; raising it past that", name, token, last);
        return server.send(List.of(Command.of("ma " + counterKey(name) + " D" + (last + 1 - token) + " v")))
                .thenApply(r -> {
                    Reply reply = r.get(0);
                    if (!reply.status().equals("VA")) {
                        throw new CompletionException(refused(name, "fencing counter", reply));
                    }
                    return Long.parseLong(java.util.Objects.requireNonNull(reply.value(), "VA without a value")
                            .trim());
                });
    }

    // ---- the grant record

    /**
     * A grant whose record is not written yet: written once the grant has been held for {@link
     * #RECORD_DELAY_NANOS}, dropped if it was released before.
     */
    private record PendingRecord(String name, String acquisitionId, long token, long sinceMillis, long dueNanos) {}

    /*
     * Why the record waits: the token is known only once the add's pipeline has answered, so it needs
     * a command of its own (~90 bytes to memcached). Most grants (an uncontended acquire and release,
     * benchmark W1) end long before anyone could inspect them, so writing the record only for a grant
     * still held after RECORD_DELAY_NANOS keeps it off the short cycles. The sweep runs on the timer
     * thread only while records are pending; a grant costs one queue node, no task of its own (a
     * scheduled task per grant would wake the timer thread on every cycle).
     */
    private void recordLater(PendingRecord record) {
        pendingRecords.add(record);
        if (sweepScheduled.compareAndSet(false, true)
                && backend.schedule(this::writeDueRecords, RECORD_DELAY_NANOS / 1_000_000) == null) {
            sweepScheduled.set(false); // closed: nothing more is written
        }
    }

    private void writeDueRecords() {
        long now = ticker.read();
        PendingRecord r;
        while ((r = pendingRecords.peek()) != null && now - r.dueNanos() >= 0) {
            pendingRecords.poll();
            if (held.containsKey(r.acquisitionId())) {
                String value = r.acquisitionId() + " " + r.token() + " " + r.sinceMillis();
                backend.serverFor(r.name()).send(List.of(Command.set(grantKey(r.name()), value, "T" + ttlSeconds)));
            }
        }
        PendingRecord next = pendingRecords.peek();
        if (next != null) {
            if (backend.schedule(this::writeDueRecords, Math.max(1, (next.dueNanos() - now) / 1_000_000)) == null) {
                sweepScheduled.set(false);
            }
            return;
        }
        sweepScheduled.set(false);
        // A grant queued after the peek above but before the flag went down scheduled nothing.
        if (!pendingRecords.isEmpty() && sweepScheduled.compareAndSet(false, true)) {
            if (backend.schedule(this::writeDueRecords, 1) == null) {
                sweepScheduled.set(false);
            }
        }
    }

    private CompletableFuture<Void> undo(Server server, String name, boolean added, long cas) {
        if (!added) {
            return CompletableFuture.completedFuture(null);
        }
        return server.send(List.of(Command.of("md " + lockKey(name) + " C" + cas)))
                .thenAccept(r -> {
                    log.debug(
                            "[lock={}] undid an add made while the server's data life was not settled: {}",
                            name,
                            r.get(0));
                });
    }

    private long lastToken(String name) {
        synchronized (lastTokens) {
            Long t = lastTokens.get(name);
            return t == null ? 0 : t;
        }
    }

    private void noteToken(String name, long token) {
        synchronized (lastTokens) {
            lastTokens.merge(name, token, Math::max);
        }
    }

    // ---- waiting

    /** One waiting acquisition of this client. */
    private final class Waiter {
        final QueueEntry entry;

        @GuardedBy("this")
        @Nullable
        CompletableFuture<Position> pending;

        @GuardedBy("this")
        @Nullable
        CompletableFuture<Attempt> inflight;

        @GuardedBy("this")
        @Nullable
        ScheduledFuture<?> timer;

        @GuardedBy("this")
        boolean gone;

        @GuardedBy("this")
        boolean waiterKeyWritten;

        @GuardedBy("this")
        int polls;

        @GuardedBy("this")
        long nextDelayMs = -1;

        /** A kick came while a poll was in flight: poll again at once when it ends without a grant. */
        @GuardedBy("this")
        boolean kicked;

        /** When the wait began (wall clock, shown by {@code dlock inspect}). */
        final long sinceMillis = System.currentTimeMillis();

        Waiter(QueueEntry entry) {
            this.entry = entry;
        }

        void await(CompletableFuture<Position> f) {
            synchronized (this) {
                if (gone) {
                    f.completeExceptionally(new EntryLostException(entry, "it was withdrawn"));
                    return;
                }
                pending = f;
                scheduleLocked(nextDelayMs >= 0 ? nextDelayMs : pollDelay(polls));
            }
        }

        @GuardedBy("this")
        private void scheduleLocked(long delayMs) {
            if (timer != null) {
                timer.cancel(false);
            }
            timer = backend.schedule(this::poll, delayMs);
        }

        /** Polls now (a release by this client, a reconnect), unless a poll is in flight. */
        void kick() {
            synchronized (this) {
                if (gone || pending == null) {
                    return;
                }
                if (inflight != null && !inflight.isDone()) {
                    // Its reading may predate what the kick announces (a release, a quarantine's end).
                    kicked = true;
                    return;
                }
                polls = 0;
                scheduleLocked(0);
            }
        }

        void poll() {
            CompletableFuture<Attempt> a;
            synchronized (this) {
                if (gone || pending == null || inflight != null && !inflight.isDone()) {
                    return;
                }
                timer = null;
                polls++;
                kicked = false;
                a = attempt(entry, sinceMillis, false, true);
                inflight = a;
            }
            a.whenComplete(this::onAttempt);
        }

        private void onAttempt(@Nullable Attempt r, @Nullable Throwable error) {
            CompletableFuture<Position> done;
            Grant grant;
            synchronized (this) {
                if (gone) {
                    return; // release() waits for this attempt and gives back what it got
                }
                Throwable cause = error == null ? null : unwrap(error);
                if (cause != null
                        && notSent(cause)
                        && !backend.serverFor(entry.lockName()).mayReconnectSoon()) {
                    // Its server is down: the wait ends here rather than polling a dead server until the
                    // caller's timeout. The engine withdraws the entry, as after any failed wait.
                    CompletableFuture<Position> failed = pending;
                    pending = null;
                    if (failed != null) {
                        failed.completeExceptionally(failure(entry.lockName(), "waiting", cause));
                    }
                    return;
                }
                Grant got = r == null ? null : r.grant;
                CompletableFuture<Position> waiting = pending;
                if (cause != null || got == null || waiting == null) {
                    if (cause != null) {
                        log.debug("[lock={} state=QUEUED] poll failed: {}", entry.lockName(), cause.toString());
                    }
                    long delay = kicked ? 0 : r != null && r.retryMs >= 0 ? r.retryMs : pollDelay(polls);
                    kicked = false;
                    scheduleLocked(delay);
                    return;
                }
                gone = true;
                done = waiting;
                grant = got;
                pending = null;
            }
            waiters.remove(entry.key(), this);
            Server server = backend.serverFor(entry.lockName());
            // The waiter key goes before the grant is reported, so a holder never has one beside it;
            // if that fails, the grant is reported anyway and the delete retried in the background.
            long deadline = ticker.read() + expiryNanos();
            server.send(List.of(Command.of("md " + waiterKey(entry.lockName(), entry.acquisitionId()))))
                    .whenComplete((x, e) -> {
                        if (e != null) {
                            CompletableFuture<Void> unused = deleteWaiterKey(entry, deadline);
                        }
                        done.complete(Position.granted(grant));
                    });
        }

        /**
         * Stops polling; completes once no poll is in flight and the waiter key is gone (retried
         * until {@code deadlineNanos}, when it has expired).
         */
        CompletableFuture<Void> withdraw(long deadlineNanos) {
            CompletableFuture<Attempt> last;
            boolean keyWritten;
            synchronized (this) {
                gone = true;
                if (timer != null) {
                    timer.cancel(false);
                    timer = null;
                }
                last = inflight;
                keyWritten = waiterKeyWritten || polls > 0;
            }
            CompletableFuture<Void> settled =
                    last == null ? CompletableFuture.completedFuture(null) : last.handle((x, e) -> null);
            if (!keyWritten) {
                return settled;
            }
            return settled.thenCompose(x -> deleteWaiterKey(entry, deadlineNanos))
                    .handle((x, e) -> null);
        }
    }

    private long pollDelay(int polls) {
        long d = Math.min(maxPollMs, MIN_POLL_MS << Math.min(16, polls));
        return d / 2 + ThreadLocalRandom.current().nextLong(d / 2 + 1);
    }

    private static long jitter() {
        return ThreadLocalRandom.current().nextLong(50, 150);
    }

    @Override
    public CompletionStage<Position> awaitTurn(Position waiting) {
        CompletableFuture<Position> result = new CompletableFuture<>();
        Waiter w = waiters.get(waiting.entry().key());
        if (w == null) {
            result.completeExceptionally(new EntryLostException(waiting.entry(), "it is not waiting here"));
            return result;
        }
        w.await(result);
        return result;
    }

    /**
     * Retries every pending delete and polls every waiter at once (after a reconnect): the deletes
     * first, so that they precede the polls on the new connection.
     */
    void kickAll() {
        List.copyOf(removals).forEach(Removal::run);
        waiters.values().forEach(Waiter::kick);
    }

    private void kick(String lockName) {
        for (Waiter w : waiters.values()) {
            if (w.entry.lockName().equals(lockName)) {
                w.kick();
            }
        }
    }

    // ---- release

    /*
     * Release, withdrawal and loss cleanup all delete keys, and a delete must outlive a dropped
     * connection (LockProtocol.release: "retried through connection drops until the entry is gone or
     * its session has ended"): a lock key left behind blocks every client until it expires. Each
     * delete is a Removal, retried on transport failures (no connection, a connection closed with the
     * request unanswered) until it is answered, or until the key it deletes would have expired anyway
     * (memcached's "session" is the key's own TTL), or until the client closes. A reconnect runs the
     * pending removals at once, before its waiters' polls go out on the new connection.
     *
     * The stage release() returns completes once the key is gone, found not ours, or past its expiry.
     * While the server is only briefly disconnected it stays pending (the engine waits for it up to
     * the connect timeout in Lease.close, and the delete usually lands within that); once a reconnect
     * attempt has failed (the server is down, not just a dropped connection) it completes
     * exceptionally with the failure, so that closing a lease does not wait for a dead server, and the
     * retries go on in the background. It also completes exceptionally when the client closes.
     */

    @Override
    public CompletionStage<Void> release(QueueEntry entry) {
        Waiter w = waiters.isEmpty() ? null : waiters.remove(entry.key());
        Held h = held.remove(entry.acquisitionId());
        // The lock key, if ours, was last written (acquire, renewal) before now, with ttlSeconds:
        // past this deadline it is gone whatever we do. Held knows when it was last written.
        long now = ticker.read();
        long deadline = (h != null ? h.writtenAtNanos : now) + expiryNanos();
        CompletableFuture<Void> done = w == null
                ? releaseHeld(entry, h, deadline)
                : w.withdraw(now + expiryNanos()).thenCompose(x -> releaseHeld(entry, h, deadline));
        return done.handle((x, e) -> {
            if (!waiters.isEmpty()) {
                kick(entry.lockName());
            }
            if (e != null) {
                throw new CompletionException(failure(entry.lockName(), "release", unwrap(e)));
            }
            return null;
        });
    }

    /** How long after a write with {@link #ttlSeconds} its key is surely gone (memcached's clock is coarse). */
    private long expiryNanos() {
        return TimeUnit.SECONDS.toNanos(ttlSeconds + 1);
    }

    /**
     * Deletes the lock key if this entry holds it: CAS-checked with the CAS we got on this connection,
     * otherwise (another connection, a retry after a failure) read back first.
     */
    private CompletableFuture<Void> releaseHeld(QueueEntry entry, @Nullable Held h, long deadlineNanos) {
        Removal removal = new Removal(entry.lockName(), "lock key", deadlineNanos, attempt -> {
            if (attempt == 0 && h != null && h.generation == h.server.generation()) {
                // The releasing thread waits for this (Lease.close): it reads the reply itself.
                return h.server
                        .send(List.of(Command.of("md " + lockKey(entry.lockName()) + " C" + h.cas)), true)
                        .thenCompose(r -> r.get(0).status().equals("EX")
                                ? deleteIfOurs(entry, 3)
                                : CompletableFuture.completedFuture(null));
            }
            // No CAS we can trust on this connection (or a lost reply): read the key back first.
            return deleteIfOurs(entry, 3);
        });
        removal.start();
        return removal.result;
    }

    /** Deletes the lock key only if it holds this entry's acquisition id (CAS-checked). */
    private CompletableFuture<Void> deleteIfOurs(QueueEntry entry, int attemptsLeft) {
        Server server = backend.serverFor(entry.lockName());
        String key = lockKey(entry.lockName());
        return server.send(List.of(Command.of("mg " + key + " v c"))).thenCompose(r -> {
            Reply got = r.get(0);
            if (!ours(got, entry)) {
                return CompletableFuture.completedFuture(null);
            }
            return server.send(List.of(Command.of("md " + key + " C" + got.flagLong('c'))))
                    .thenCompose(d -> d.get(0).status().equals("EX") && attemptsLeft > 1
                            ? deleteIfOurs(entry, attemptsLeft - 1)
                            : CompletableFuture.<Void>completedFuture(null));
        });
    }

    /** Deletes a waiter key (its own per acquisition: no owner check needed), retried as a {@link Removal}. */
    private CompletableFuture<Void> deleteWaiterKey(QueueEntry entry, long deadlineNanos) {
        String key = waiterKey(entry.lockName(), entry.acquisitionId());
        Removal removal = new Removal(
                entry.lockName(), "waiter key", deadlineNanos, attempt -> backend.serverFor(entry.lockName())
                        .send(List.of(Command.of("md " + key)))
                        .thenApply(r -> null));
        removal.start();
        return removal.result;
    }

    /** Removals waiting for their next try; a reconnect runs them at once ({@link #kickAll}). */
    private final Set<Removal> removals = ConcurrentHashMap.newKeySet();

    /**
     * One delete, retried through connection drops (see the comment above {@link #release}). Each try
     * is a whole owner-checked delete, so a retry never deletes a key that is no longer ours.
     *
     * <p>Concurrency: at most one try is in flight (a kick during a try is ignored: the try that is
     * running is as new as the connection); the fields are guarded by the removal's monitor.
     */
    private final class Removal {
        final String lockName;
        final String what;
        final long deadlineNanos;
        final IntFunction<CompletableFuture<Void>> tryOnce;
        final CompletableFuture<Void> result = new CompletableFuture<>();

        @GuardedBy("this")
        int attempts;

        @GuardedBy("this")
        boolean trying;

        /** Done: the key is gone, not ours, expired, or the client closed; no more tries. */
        @GuardedBy("this")
        boolean over;

        @GuardedBy("this")
        @Nullable
        ScheduledFuture<?> timer;

        Removal(String lockName, String what, long deadlineNanos, IntFunction<CompletableFuture<Void>> tryOnce) {
            this.lockName = lockName;
            this.what = what;
            this.deadlineNanos = deadlineNanos;
            this.tryOnce = tryOnce;
        }

        void start() {
            run();
        }

        /** Tries now unless a try is in flight or the removal is over. */
        void run() {
            int attempt;
            synchronized (this) {
                if (trying || over) {
                    return;
                }
                if (timer != null) {
                    timer.cancel(false);
                    timer = null;
                }
                trying = true;
                attempt = attempts++;
            }
            removals.remove(this);
            CompletableFuture<Void> tried;
            try {
                tried = tryOnce.apply(attempt);
            } catch (RuntimeException e) {
                tried = CompletableFuture.failedFuture(e);
            }
            tried.whenComplete((x, e) -> onTried(attempt, e));
        }

        private void onTried(int attempt, @Nullable Throwable error) {
            Throwable cause = error == null ? null : unwrap(error);
            long left = deadlineNanos - ticker.read();
            boolean retry = cause instanceof MemcachedIoException && !backend.isClosed() && left > 0;
            synchronized (this) {
                trying = false;
                over = over || !retry;
            }
            if (cause == null) {
                result.complete(null);
                return;
            }
            if (!(cause instanceof MemcachedIoException) || backend.isClosed()) {
                // Refused by the server (retrying would not help), or the client is closing.
                result.completeExceptionally(cause);
                return;
            }
            if (left <= 0) {
                log.debug(
                        "[lock={} state=RELEASING] gave up deleting the {}: it has expired by now ({})",
                        lockName,
                        what,
                        cause.toString());
                result.complete(null);
                return;
            }
            log.debug(
                    "[lock={} state=RELEASING] deleting the {} failed, retrying: {}", lockName, what, cause.toString());
            if (!backend.serverFor(lockName).mayReconnectSoon()) {
                // The server is down: the caller hears of it now; the retries go on until the key expires.
                result.completeExceptionally(cause);
            }
            long delay = Math.min(Math.min(1000, backoffMs(attempt)), TimeUnit.NANOSECONDS.toMillis(left) + 1);
            synchronized (this) {
                if (over) {
                    return; // cancelled meanwhile
                }
                removals.add(this);
                timer = backend.schedule(this::retry, delay);
                if (timer == null) {
                    over = true;
                    removals.remove(this);
                    result.completeExceptionally(cause); // closing
                }
            }
        }

        private void retry() {
            if (backend.isClosed()) {
                cancel();
                return;
            }
            run();
        }

        /** Stops retrying (the client is closing). */
        void cancel() {
            synchronized (this) {
                over = true;
                if (timer != null) {
                    timer.cancel(false);
                    timer = null;
                }
            }
            removals.remove(this);
            result.completeExceptionally(new MemcachedIoException("the client closed", null));
        }
    }

    // ---- renewal

    @Override
    public CompletionStage<Grant> renew(Grant grant) {
        QueueEntry entry = grant.entry();
        String name = entry.lockName();
        Server server = backend.serverFor(name);
        Held h = held.get(entry.acquisitionId());
        long t0 = ticker.read();
        long downFor = server.downForNanos();
        if (downFor > backend.maxSuspension().toNanos()) {
            // What the engine's SUSPENDED bound does for a whole client, per server: this lock's
            // server has been unreachable for longer than its grants are sure to live there.
            held.remove(entry.acquisitionId());
            return CompletableFuture.failedFuture(new EntryLostException(
                    entry,
                    "its memcached server " + server.label + " has been unreachable for "
                            + TimeUnit.NANOSECONDS.toMillis(downFor) + " ms, longer than "
                            + backend.maxSuspension().toMillis() + " ms (a third of the lease)"));
        }
        CompletableFuture<Long> cas;
        long generation = server.generation();
        if (h != null && h.generation == generation) {
            cas = CompletableFuture.completedFuture(h.cas);
        } else {
            cas = server.send(List.of(Command.of("mg " + lockKey(name) + " v c")))
                    .thenApply(r -> {
                        if (!ours(r.get(0), entry)) {
                            throw new CompletionException(gone(entry, grant, r.get(0)));
                        }
                        return r.get(0).flagLong('c');
                    });
        }
        long since = h != null ? h.sinceMillis : 0;
        String value = renewedValue(entry, grant.fencingToken(), since);
        return cas.thenCompose(
                        c -> server.send(List.of(Command.set(lockKey(name), value, "C" + c + " T" + ttlSeconds + " c")))
                                .thenApply(r -> {
                                    Reply reply = r.get(0);
                                    if (reply.status().equals("HD")) {
                                        Held now = new Held(server, generation, reply.flagLong('c'), since, t0);
                                        if (h == null
                                                ? held.putIfAbsent(entry.acquisitionId(), now) != null
                                                : !held.replace(entry.acquisitionId(), h, now)) {
                                            held.computeIfPresent(entry.acquisitionId(), (k, old) -> now);
                                        }
                                        return new Grant(entry, grant.fencingToken(), t0 + leaseNanos - marginNanos);
                                    }
                                    if (reply.isError()) {
                                        throw new CompletionException(refused(name, "renewal", reply));
                                    }
                                    throw new CompletionException(gone(entry, grant, reply));
                                }))
                .handle((g, e) -> {
                    if (e == null) {
                        return g;
                    }
                    Throwable cause = unwrap(e);
                    if (cause instanceof EntryLostException) {
                        held.remove(entry.acquisitionId());
                        throw new CompletionException(cause);
                    }
                    throw new CompletionException(failure(name, "renewal", cause));
                });
    }

    private static EntryLostException gone(QueueEntry entry, Grant grant, Reply reply) {
        return new EntryLostException(
                entry,
                "its key (server token " + grant.fencingToken() + ") is gone from memcached or"
                        + " belongs to another holder (" + reply.status()
                        + "): expired, evicted, deleted, or the server"
                        + " restarted");
    }

    // ---- recovery

    @Override
    public CompletionStage<Optional<QueueEntry>> findOwnEntry(String lockName, String acquisitionId) {
        QueueEntry entry = new QueueEntry(lockName, acquisitionId, lockKey(lockName) + "#" + acquisitionId, 0, 0);
        return backend.serverFor(lockName)
                .send(List.of(Command.of("mg " + lockKey(lockName) + " v")))
                .handle((r, e) -> {
                    if (e != null) {
                        throw new CompletionException(
                                failure(lockName, "looking up entry " + acquisitionId, unwrap(e)));
                    }
                    return ours(r.get(0), entry) ? Optional.of(entry) : Optional.<QueueEntry>empty();
                });
    }

    void close() {
        for (Waiter w : waiters.values()) {
            synchronized (w) {
                w.gone = true;
                if (w.timer != null) {
                    w.timer.cancel(false);
                }
            }
        }
        waiters.clear();
        List.copyOf(removals).forEach(Removal::cancel);
        held.clear();
        pendingRecords.clear();
    }

    // ---- helpers

    private long backoffMs(int attempt) {
        long base = Math.max(1, backend.options.retryPolicy().baseSleep().toMillis());
        long max = Math.max(base, backend.options.retryPolicy().maxSleep().toMillis());
        return Math.min(max, base << Math.min(20, Math.max(0, attempt)));
    }

    /** A request that failed before reaching the server (no connection). */
    private static boolean notSent(Throwable t) {
        return t instanceof MemcachedIoException
                && String.valueOf(t.getMessage()).startsWith("not connected");
    }

    static Throwable unwrap(Throwable t) {
        while (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private static LockBackendException refused(String name, String what, Reply reply) {
        return new LockBackendException(name, MemcachedBackend.NAME, what + " refused by memcached: " + reply, null);
    }

    private RuntimeException failure(String name, String what, Throwable cause) {
        if (cause instanceof LockBackendException
                || cause instanceof EntryLostException
                || cause instanceof IllegalArgumentException
                || cause instanceof UnsupportedOperationException) {
            return (RuntimeException) cause;
        }
        String where = notSent(cause) && backend.servers().size() > 1
                ? " (the server this lock's name hashes to; locks on the client's other servers are unaffected)"
                : "";
        return new LockBackendException(
                name, MemcachedBackend.NAME, what + " failed: " + cause.getMessage() + where, cause);
    }
}
