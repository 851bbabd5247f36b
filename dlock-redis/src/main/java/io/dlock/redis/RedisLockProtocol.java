package io.dlock.redis;

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
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.cluster.SlotHash;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * dlock's queue recipe on Redis, for exclusive locks, read-write locks and semaphores (see {@link
 * RedisScripts} for the data model and why each step is one script).
 *
 * <p>An acquisition is an entry in the lock's queue, identified by its acquisition id. The acquire
 * script creates the entry (or finds it again, so a request retried after a lost reply never makes
 * a second one) and grants it when nothing blocks it. A waiting entry is re-checked by its owner
 * when (a) the server publishes on this client's channel that it may now proceed, (b) the deadline
 * of the entry that blocks it passes (a crashed holder), or (c) every third of the waiter TTL, which
 * is also the waiter's heartbeat: a waiter that stops checking is purged after the TTL, so a crashed
 * waiter never blocks the queue for longer than that.
 *
 * <p>Validity: the ticker is read before a grant or renewal is sent, and the grant is valid until
 * that reading plus the lease time less a drift margin, so the client's view never outlives the
 * server's deadline (set after the request arrived).
 *
 * <p>Concurrency: stages complete on Lettuce's threads or the backend's timer thread, and nothing
 * blocks. Each waiter's state is guarded by its own monitor, held only for bookkeeping, never
 * across a command; at most one check per waiter is in flight, and a wake-up that arrives meanwhile
 * runs one more check after it.
 */
final class RedisLockProtocol implements LockProtocol {
    private static final Logger log = LoggerFactory.getLogger(RedisLockProtocol.class);

    /** What a waiting position names when there is no single predecessor. */
    static final String ANY = "*";

    private final RedisBackend backend;
    private final Ticker ticker;
    private final long leaseMs;
    private final long leaseNanos;
    private final long marginNanos;
    private final long waiterMs;
    private final String fair;
    private final int waitReplicas;
    private final long waitTimeoutMs;
    /** Waiting entries by acquisition id (a wake-up names {@code base#id}). */
    private final Map<String, Waiter> waiters = new ConcurrentHashMap<>();

    private final Map<String, Grant> held = new ConcurrentHashMap<>();
    private final String standaloneEpochKey;

    // A cycle's constant arguments, encoded once (see RedisScripts for their meaning).
    private final byte[] leaseArg;
    private final byte[] ownerArg;
    /** {@code "<fair> <waiter ms> <channel prefix>"}: what only the scripts' slow paths read. */
    private final byte[] clientArg;

    private static final byte[][] MODE_ARGS = {ascii("X"), ascii("R"), ascii("W"), ascii("S")};

    RedisLockProtocol(RedisBackend backend) {
        this.backend = backend;
        this.ticker = backend.options.ticker();
        this.leaseMs = Math.max(1, backend.options.leaseTime().toMillis());
        this.leaseNanos = TimeUnit.MILLISECONDS.toNanos(leaseMs);
        // Clock drift between this JVM and the server: 1% of the lease plus 2 ms (as Redlock).
        this.marginNanos = leaseNanos / 100 + TimeUnit.MILLISECONDS.toNanos(2);
        this.waiterMs = leaseMs;
        this.fair = backend.options.fair() ? "1" : "0";
        this.waitReplicas = backend.uri.waitReplicas();
        this.waitTimeoutMs = backend.uri.waitTimeout().toMillis();
        this.standaloneEpochKey = serverEpochKey(backend.uri.keyPrefix());
        this.leaseArg = ascii(Long.toString(leaseMs));
        this.ownerArg = backend.clientId.getBytes(StandardCharsets.UTF_8);
        this.clientArg = (fair + " " + waiterMs + " " + backend.channelPrefix).getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] ascii(String s) {
        return s.getBytes(StandardCharsets.US_ASCII);
    }

    private static byte[] modeArg(LockMode mode) {
        return MODE_ARGS[
                switch (mode) {
                    case EXCLUSIVE -> 0;
                    case READ -> 1;
                    case WRITE -> 2;
                    case SEMAPHORE -> 3;
                }];
    }

    // ---- keys

    /** The base key of a queue: {@code prefix:{name}:family}; the hash tag keeps it in one slot. */
    String base(String lockName, LockMode mode) {
        String family =
                switch (mode) {
                    case EXCLUSIVE -> "x";
                    case READ, WRITE -> "rw";
                    case SEMAPHORE -> "s";
                };
        return backend.uri.keyPrefix() + ":{" + lockName + "}:" + family;
    }

    static String[] keys(String base) {
        return new String[] {base + ":q", base + ":d", base + ":h", base + ":s"};
    }

    /** The acquire script's keys: the lone holder's key (the others follow from it) and the epoch marker. */
    String[] acquireKeys(String base) {
        return new String[] {base + ":s", epochKey(base)};
    }

    /**
     * The epoch marker that guards the queue at {@code base} (see {@link RedisScripts}): one per key
     * prefix, or on a Cluster one per hash slot, named with a tag of the queue's slot so that the
     * acquire script may touch it.
     */
    String epochKey(String base) {
        if (backend.uri.mode() != RedisUri.Mode.CLUSTER) {
            return standaloneEpochKey;
        }
        return epochKey(backend.uri.keyPrefix(), SlotHash.getSlot(base));
    }

    /** The epoch marker of Cluster slot {@code slot} under {@code keyPrefix}. */
    static String epochKey(String keyPrefix, int slot) {
        return keyPrefix + ":{" + slotTag(slot) + "}:epoch";
    }

    /** The epoch marker of a standalone or Sentinel server under {@code keyPrefix}. */
    static String serverEpochKey(String keyPrefix) {
        return keyPrefix + ":epoch";
    }

    private static final AtomicReferenceArray<String> SLOT_TAGS = new AtomicReferenceArray<>(SlotHash.SLOT_COUNT);

    /**
     * The smallest decimal number whose hash slot is {@code slot}: the same for every client, so all
     * agree on each slot's marker. Found by counting up, about 16,000 hashes, once per slot used.
     */
    static String slotTag(int slot) {
        String tag = SLOT_TAGS.get(slot);
        if (tag != null) {
            return tag;
        }
        for (int i = 0; ; i++) {
            String candidate = Integer.toString(i);
            int s = SlotHash.getSlot(candidate);
            SLOT_TAGS.compareAndSet(s, null, candidate);
            if (s == slot) {
                return SLOT_TAGS.get(slot);
            }
        }
    }

    /**
     * An entry's key: for an exclusive lock the acquisition id itself (the very string the engine
     * keeps, so a held lock pays for no key of its own, W4); else {@code rw#id} or {@code s#id}. The
     * queue's base key follows from the lock name and that family ({@link #baseOf(QueueEntry)}).
     */
    static String entryKey(LockMode mode, String acquisitionId) {
        return switch (mode) {
            case EXCLUSIVE -> acquisitionId;
            case READ, WRITE -> "rw#" + acquisitionId;
            case SEMAPHORE -> "s#" + acquisitionId;
        };
    }

    /** The base key of the queue that holds {@code entry}. */
    String baseOf(QueueEntry entry) {
        String key = entry.key();
        LockMode family =
                key.startsWith("rw#") ? LockMode.WRITE : key.startsWith("s#") ? LockMode.SEMAPHORE : LockMode.EXCLUSIVE;
        return base(entry.lockName(), family);
    }

    static String idOf(String entryKey) {
        return entryKey.substring(entryKey.lastIndexOf('#') + 1);
    }

    // ---- enqueue

    @Override
    public CompletionStage<Position> enqueue(LockRequest request) {
        CompletableFuture<Position> result = new CompletableFuture<>();
        String base = base(request.lockName(), request.mode());
        QueueEntry entry = new QueueEntry(
                request.lockName(), request.acquisitionId(), entryKey(request.mode(), request.acquisitionId()), 0, 0);
        // Registered before the request goes out, so a wake-up published between the reply and
        // the engine's awaitTurn is remembered (as `kicked`) instead of lost.
        Waiter w = new Waiter(request, entry);
        waiters.put(entry.acquisitionId(), w);
        enqueue(w, result, 0);
        return result;
    }

    private void enqueue(Waiter w, CompletableFuture<Position> result, int attempt) {
        LockRequest request = w.request;
        QueueEntry entry = w.entry;
        long t0 = ticker.read();
        acquireScript(request, entry, true).whenComplete((reply, error) -> {
            if (error != null) {
                Throwable cause = unwrap(error);
                if (transient_(cause) && attempt < backend.options.retryPolicy().maxRetries() && !backend.isClosed()) {
                    // Same acquisition id: the script finds the entry if the lost request created it.
                    if (backend.schedule(() -> enqueue(w, result, attempt + 1), backoffMs(attempt)) != null) {
                        return;
                    }
                }
                forget(w);
                result.completeExceptionally(failure(entry.lockName(), "enqueue", cause));
                return;
            }
            long status = status(reply);
            if (status == RedisScripts.GRANTED) {
                forget(w);
                deliverGrant(entry, token(reply), t0, result);
            } else if (status == RedisScripts.WAITING) {
                synchronized (w) {
                    w.waitMs = (Long) reply.get(2);
                }
                noticeFence(entry, reply);
                result.complete(Position.waiting(entry, predecessor(reply)));
            } else if (status == RedisScripts.PERMITS_DIFFER) {
                forget(w);
                result.completeExceptionally(new IllegalArgumentException("semaphore '" + request.lockName()
                        + "' on redis is in use with " + reply.get(1) + " permits; this client opened it with "
                        + request.maxPermits()));
            } else {
                forget(w);
                result.completeExceptionally(new LockBackendException(
                        entry.lockName(), RedisBackend.NAME, "enqueue: unexpected reply " + reply, null));
            }
        });
    }

    private void forget(Waiter w) {
        waiters.remove(w.entry.acquisitionId(), w);
        w.cancel();
    }

    private CompletableFuture<List<Object>> acquireScript(LockRequest request, QueueEntry entry, boolean create) {
        String despite = request.grantedDespite() == null ? "" : idOf(request.grantedDespite());
        String[] keys = acquireKeys(baseOf(entry));
        String id = entry.acquisitionId();
        byte[] mode = modeArg(request.mode());
        Object[] args;
        if (despite.isEmpty() && create && request.permits() == 1 && request.maxPermits() == 1) {
            args = new Object[] {id, mode, leaseArg, ownerArg, clientArg};
        } else {
            String extras = request.permits() + " " + request.maxPermits() + " " + (create ? "1" : "0");
            args = despite.isEmpty()
                    ? new Object[] {id, mode, leaseArg, ownerArg, clientArg, extras}
                    : new Object[] {id, mode, leaseArg, ownerArg, clientArg, extras, despite};
        }
        return backend.evalEncoded(RedisBackend.ACQUIRE, RedisBackend::multiOutput, keys, args);
    }

    /**
     * Completes {@code done} with the grant; with {@code waitReplicas}, only once that many replicas
     * acknowledged it. Otherwise the grant is given back (it could vanish in a failover) and
     * {@code done} fails with {@link LockBackendException}.
     */
    private void deliverGrant(QueueEntry entry, long token, long t0, CompletableFuture<Position> done) {
        Position granted = Position.granted(granted(entry, token, t0));
        if (waitReplicas == 0) {
            done.complete(granted);
            return;
        }
        backend.waitForReplicas(waitReplicas, waitTimeoutMs).whenComplete((acks, error) -> {
            if (error == null && acks != null && acks >= waitReplicas) {
                done.complete(granted);
                return;
            }
            held.remove(entry.key());
            release(entry).whenComplete((x, e) -> {
                if (e != null) {
                    log.warn(
                            "[lock={}] could not give back an unreplicated grant; it expires at its lease: {}",
                            entry.lockName(),
                            e.toString());
                }
            });
            done.completeExceptionally(new LockBackendException(
                    entry.lockName(),
                    RedisBackend.NAME,
                    "acquire: " + notReplicated(acks, error) + "; the grant was given back",
                    error));
        });
    }

    private String notReplicated(Long acks, Throwable error) {
        return error != null
                ? "WAIT for " + waitReplicas + " replica(s) failed: " + unwrap(error)
                : "only " + acks + " of " + waitReplicas + " replica(s) (waitReplicas) acknowledged within "
                        + waitTimeoutMs + " ms";
    }

    private Grant granted(QueueEntry entry, long token, long sentAtNanos) {
        Grant grant = new Grant(entry, token, sentAtNanos + leaseNanos - marginNanos);
        held.put(entry.key(), grant);
        return grant;
    }

    /** The acquire script's status; a reply of the token alone is the fast path's grant. */
    private static long status(List<Object> reply) {
        return reply.size() == 1 ? RedisScripts.GRANTED : (Long) reply.get(0);
    }

    private static long token(List<Object> reply) {
        return (Long) reply.get(reply.size() == 1 ? 0 : 1);
    }

    /** A waiting reply held back by the epoch fence carries its remaining ms as a fifth element. */
    private void noticeFence(QueueEntry entry, List<Object> reply) {
        if (reply.size() > 4 && reply.get(4) instanceof Long ms && ms > 0) {
            String prefix = backend.uri.keyPrefix();
            String scope = backend.uri.mode() != RedisUri.Mode.CLUSTER
                    ? "key prefix '" + prefix + "'"
                    : "key prefix '" + prefix + "', slot " + SlotHash.getSlot(baseOf(entry));
            backend.fences.noticed(scope, ms, FENCE_REASON);
        }
    }

    static final String FENCE_REASON = "the epoch marker was missing, so the server lost its data (a restart"
            + " without persistence, a flush, an eviction) or is new; a grant it forgot may still be valid for"
            + " up to a lease, counted from the server's start where that was less than a lease ago (run"
            + " 'dlock init' once on a brand-new deployment)";

    private static String predecessor(List<Object> reply) {
        Object p = reply.size() > 3 ? reply.get(3) : null;
        return p == null || p.toString().isEmpty() ? ANY : p.toString();
    }

    // ---- waiting

    /** One waiting entry of this client. */
    private final class Waiter {
        final LockRequest request;
        final QueueEntry entry;

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

        @GuardedBy("this")
        @Nullable
        ScheduledFuture<?> timer;

        @GuardedBy("this")
        long waitMs = 1;

        @GuardedBy("this")
        int failures;

        Waiter(LockRequest request, QueueEntry entry) {
            this.request = request;
            this.entry = entry;
        }

        /** Runs a check now, or once more after the one in flight. */
        void check() {
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
                if (timer != null) {
                    timer.cancel(false);
                    timer = null;
                }
            }
            long t0 = ticker.read();
            acquireScript(request, entry, false).whenComplete((reply, error) -> onReply(reply, error, t0));
        }

        private void onReply(List<Object> reply, Throwable error, long t0) {
            CompletableFuture<Position> done = null;
            Object outcome = null;
            boolean runAgain;
            synchronized (this) {
                checking = false;
                runAgain = again;
                again = false;
                if (gone) {
                    return;
                }
                if (error != null) {
                    // Transient: keep waiting; the entry survives until the waiter TTL passes, and a
                    // check after that reports it missing, which makes the engine enqueue again.
                    failures++;
                    log.debug(
                            "[lock={} state=QUEUED] check of {} failed ({}): {}",
                            entry.lockName(),
                            entry.key(),
                            failures,
                            unwrap(error).toString());
                    scheduleLocked(runAgain ? 0 : Math.min(heartbeatMs(), backoffMs(failures - 1)));
                    return;
                }
                failures = 0;
                long status = status(reply);
                if (status == RedisScripts.GRANTED) {
                    gone = true;
                    done = pending;
                    outcome = token(reply);
                } else if (status == RedisScripts.WAITING) {
                    waitMs = (Long) reply.get(2);
                    noticeFence(entry, reply);
                    scheduleLocked(runAgain ? 0 : nextCheckMs());
                    return;
                } else {
                    gone = true;
                    done = pending;
                    outcome = new EntryLostException(
                            entry,
                            status == RedisScripts.MISSING
                                    ? "it is no longer in the queue (expired while unchecked?)"
                                    : "unexpected reply " + reply);
                }
            }
            waiters.remove(entry.acquisitionId(), this);
            if (done == null) {
                return; // no caller was waiting on this check
            }
            if (outcome instanceof Long token) {
                deliverGrant(entry, token, t0, done);
            } else {
                done.completeExceptionally((Throwable) outcome);
            }
        }

        @GuardedBy("this")
        private void scheduleLocked(long delayMs) {
            if (timer != null) {
                timer.cancel(false);
            }
            timer = backend.schedule(this::check, delayMs);
        }

        /** Starts waiting on behalf of one awaitTurn call. */
        void await(CompletableFuture<Position> f) {
            boolean now;
            synchronized (this) {
                if (gone) {
                    f.completeExceptionally(new EntryLostException(entry, "it was released"));
                    return;
                }
                pending = f;
                now = kicked;
                kicked = false;
                if (!now) {
                    scheduleLocked(nextCheckMs());
                }
            }
            if (now) {
                check();
            }
        }

        void cancel() {
            synchronized (this) {
                gone = true;
                if (timer != null) {
                    timer.cancel(false);
                    timer = null;
                }
            }
        }

        @GuardedBy("this")
        private long nextCheckMs() {
            // Right after the blocker's deadline (a crashed holder), or at the heartbeat.
            return Math.min(waitMs + 5, heartbeatMs());
        }
    }

    private long heartbeatMs() {
        return Math.max(1, waiterMs / 3);
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

    /** A message on this client's channel: the entry it names may proceed. */
    void onWake(String message) {
        Waiter w = waiters.get(idOf(message)); // the scripts publish base#id
        if (w != null) {
            w.check();
        }
    }

    /**
     * A message on this client's channel: an operator removed the grant of the entry it names
     * ({@code base#id}) by force. Its grant is forgotten and the engine told, which turns the lease
     * lost; an entry this client no longer holds (released meanwhile) is ignored.
     */
    void onForced(String entryKey) {
        int hash = entryKey.lastIndexOf('#');
        if (hash < 0) {
            return;
        }
        String base = entryKey.substring(0, hash);
        String id = entryKey.substring(hash + 1);
        String key =
                switch (base.substring(base.lastIndexOf(':') + 1)) {
                    case "rw" -> entryKey(LockMode.WRITE, id);
                    case "s" -> entryKey(LockMode.SEMAPHORE, id);
                    default -> entryKey(LockMode.EXCLUSIVE, id);
                };
        Grant g = held.remove(key);
        if (g != null) {
            backend.forcedListener.accept(g.entry());
        }
    }

    /** Re-checks every waiter at once, after wake-ups may have been missed (a reconnect). */
    void kickAll() {
        for (Waiter w : waiters.values()) {
            w.check();
        }
    }

    // ---- release

    @Override
    public CompletionStage<Void> release(QueueEntry entry) {
        Waiter w = waiters.remove(entry.acquisitionId());
        if (w != null) {
            w.cancel();
        }
        held.remove(entry.key());
        CompletableFuture<Void> done = new CompletableFuture<>();
        release(entry, done, 0, ticker.read());
        return done;
    }

    private void release(QueueEntry entry, CompletableFuture<Void> done, int attempt, long startNanos) {
        backend.evalEncoded(
                        RedisBackend.RELEASE,
                        RedisBackend::integerOutput,
                        new String[] {baseOf(entry) + ":s"},
                        entry.acquisitionId(),
                        clientArg)
                .whenComplete((existed, error) -> {
                    if (error == null) {
                        done.complete(null);
                        return;
                    }
                    Throwable cause = unwrap(error);
                    // Retried through drops while the entry could still block others; after its
                    // lease it expires on the server by itself.
                    boolean keepTrying =
                            transient_(cause) && !backend.isClosed() && ticker.read() - startNanos < leaseNanos;
                    if (keepTrying
                            && backend.schedule(() -> release(entry, done, attempt + 1, startNanos), backoffMs(attempt))
                                    != null) {
                        return;
                    }
                    done.completeExceptionally(failure(entry.lockName(), "release of " + entry.key(), cause));
                });
    }

    // ---- renewal

    @Override
    public CompletionStage<Grant> renew(Grant grant) {
        QueueEntry entry = grant.entry();
        long t0 = ticker.read();
        return backend.evalEncoded(
                        RedisBackend.RENEW,
                        RedisBackend::integerOutput,
                        new String[] {baseOf(entry) + ":s"},
                        entry.acquisitionId(),
                        Long.toString(grant.fencingToken()),
                        leaseArg,
                        clientArg)
                .handle((extended, error) -> {
                    if (error != null) {
                        throw new CompletionException(failure(entry.lockName(), "renewal", unwrap(error)));
                    }
                    if (extended == null || extended != 1L) {
                        held.remove(entry.key());
                        throw new CompletionException(new EntryLostException(
                                entry,
                                "its grant (server token " + grant.fencingToken() + ") is gone from the server"));
                    }
                    return new Grant(entry, grant.fencingToken(), t0 + leaseNanos - marginNanos);
                })
                .thenCompose(renewed -> waitReplicas == 0
                        ? CompletableFuture.completedFuture(renewed)
                        : backend.waitForReplicas(waitReplicas, waitTimeoutMs).handle((acks, error) -> {
                            // An unreplicated deadline could roll back in a failover: a failed renewal,
                            // retried at the next tick; the lease lapses if none succeeds in time.
                            if (error != null || acks == null || acks < waitReplicas) {
                                throw new CompletionException(new LockBackendException(
                                        entry.lockName(),
                                        RedisBackend.NAME,
                                        "renewal: " + notReplicated(acks, error),
                                        error));
                            }
                            return renewed;
                        }))
                .thenApply(renewed -> {
                    held.replace(entry.key(), renewed);
                    return renewed;
                });
    }

    // ---- recovery

    @Override
    public CompletionStage<Optional<QueueEntry>> findOwnEntry(String lockName, String acquisitionId) {
        List<CompletableFuture<Optional<QueueEntry>>> lookups = new ArrayList<>();
        for (LockMode mode : new LockMode[] {LockMode.EXCLUSIVE, LockMode.WRITE, LockMode.SEMAPHORE}) {
            String base = base(lockName, mode);
            // A queue entry is "mode permits owner token" in the hash; a lone holder "id " + that in s.
            lookups.add(backend.hget(base + ":h", acquisitionId)
                    .thenCombine(
                            backend.get(base + ":s"),
                            (v, solo) -> v != null
                                    ? v
                                    : solo != null && solo.startsWith(acquisitionId + " ")
                                            ? solo.substring(acquisitionId.length() + 1)
                                            : null)
                    .thenApply(v -> {
                        if (v == null) {
                            return Optional.<QueueEntry>empty();
                        }
                        String[] parts = v.split(" ");
                        if (parts.length != 4 || !parts[2].equals(backend.clientId)) {
                            return Optional.<QueueEntry>empty();
                        }
                        return Optional.of(new QueueEntry(
                                lockName, acquisitionId, entryKey(mode, acquisitionId), 0, Long.parseLong(parts[3])));
                    }));
        }
        return CompletableFuture.allOf(lookups.toArray(new CompletableFuture<?>[0]))
                .handle((x, error) -> {
                    if (error != null) {
                        throw new CompletionException(
                                failure(lockName, "looking up entry " + acquisitionId, unwrap(error)));
                    }
                    return lookups.stream()
                            .map(CompletableFuture::join)
                            .flatMap(Optional::stream)
                            .findFirst();
                });
    }

    /**
     * Checks, after a reconnect, each grant this client still considers valid: whether it is on the
     * server with its token. Completes with the grants that are gone, which are forgotten here; a
     * grant whose validity already ran out is not checked (the engine has declared its lease lost,
     * or does so within a renewal tick), nor is one whose renewal reported it gone (forgotten then).
     * The engine learns of each gone grant from its next renewal, which fails with {@link
     * EntryLostException}; the backend turns them all lost at once when nothing checked survived.
     */
    CompletableFuture<Verdict> verifyGrants() {
        long now = ticker.read();
        List<Grant> checked = new ArrayList<>();
        List<CompletableFuture<Long>> checks = new ArrayList<>();
        for (Grant g : held.values()) {
            if (g.validUntilNanos() - now <= 0) {
                continue;
            }
            String base = baseOf(g.entry());
            checked.add(g);
            checks.add(backend.<Long>eval(
                    RedisBackend.HOLDS,
                    ScriptOutputType.INTEGER,
                    new String[] {base + ":d", base + ":h", base + ":s"},
                    g.entry().acquisitionId(),
                    Long.toString(g.fencingToken())));
        }
        return CompletableFuture.allOf(checks.toArray(new CompletableFuture<?>[0]))
                .thenApply(x -> {
                    List<Grant> gone = new ArrayList<>();
                    for (int i = 0; i < checked.size(); i++) {
                        if (checks.get(i).join() != 1L) {
                            Grant g = checked.get(i);
                            gone.add(g);
                            held.remove(g.entry().key(), g);
                        }
                    }
                    return new Verdict(checked.size(), List.copyOf(gone));
                });
    }

    /**
     * What a check after a reconnect found.
     *
     * @param checked how many grants were checked
     * @param gone those of them that are no longer on the server
     */
    record Verdict(int checked, List<Grant> gone) {
        /** Whether grants were checked and none survived (a server that lost its data). */
        boolean allGone() {
            return checked > 0 && gone.size() == checked;
        }
    }

    /** Stops every waiter's timer; the server removes abandoned entries after their TTL. */
    void close() {
        for (Waiter w : waiters.values()) {
            w.cancel();
        }
        waiters.clear();
        held.clear();
    }

    // ---- helpers

    private long backoffMs(int attempt) {
        long base = Math.max(1, backend.options.retryPolicy().baseSleep().toMillis());
        long max = Math.max(base, backend.options.retryPolicy().maxSleep().toMillis());
        return Math.min(max, base << Math.min(20, Math.max(0, attempt)));
    }

    /** Whether a failure may heal by itself (a drop, a timeout) rather than being a refusal. */
    static boolean transient_(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof RedisCommandTimeoutException
                    || c instanceof RedisConnectionException
                    || c instanceof IOException) {
                return true;
            }
            String m = String.valueOf(c.getMessage());
            if (m.startsWith("LOADING")
                    || m.startsWith("TRYAGAIN")
                    || m.startsWith("CLUSTERDOWN")
                    || m.startsWith("MASTERDOWN")
                    || m.startsWith("READONLY")
                    || m.contains("Connection closed")
                    || m.contains("Connection reset")
                    || m.contains("Currently not connected")) {
                return true;
            }
        }
        return false;
    }

    static Throwable unwrap(Throwable t) {
        while (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private RuntimeException failure(String lockName, String what, Throwable cause) {
        if (cause instanceof LockBackendException
                || cause instanceof EntryLostException
                || cause instanceof IllegalArgumentException) {
            return (RuntimeException) cause;
        }
        String m = String.valueOf(cause.getMessage());
        String acl = RedisConnector.aclHint(m, backend.uri.keyPrefix());
        String hint = !acl.isEmpty() ? acl : m.startsWith("NOAUTH") ? " (authentication required)" : "";
        return new LockBackendException(lockName, RedisBackend.NAME, what + " failed: " + m + hint, cause);
    }
}
