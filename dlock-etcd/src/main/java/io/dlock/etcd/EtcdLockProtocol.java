package io.dlock.etcd;

import static io.dlock.etcd.EtcdBackend.bytes;
import static io.dlock.etcd.EtcdBackend.string;

import io.dlock.LockBackendException;
import io.dlock.spi.EntryLostException;
import io.dlock.spi.Grant;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockProtocol;
import io.dlock.spi.LockRequest;
import io.dlock.spi.Position;
import io.dlock.spi.QueueEntry;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Watch;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import io.etcd.jetcd.options.WatchOption;
import io.etcd.jetcd.watch.WatchEvent;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLongArray;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * dlock's lock recipes on etcd.
 *
 * <p>Keys: an acquisition of lock {@code n} puts {@code <ns>//n/<family>/<acquisition id>}, attached
 * to the client's lease, where the family is {@code x} (exclusive lock), {@code rw} (read-write
 * lock) or {@code s} (semaphore). The empty segment after the namespace ends it: a namespace has no
 * empty segment and a lock name no slash, so no namespace's keys start with another's ({@code
 * app//} is no prefix of {@code app/orders//}), and a range over one lock's family holds that
 * family's keys only. A key or value in a range that dlock did not write is skipped (logged at
 * debug), never parsed as an entry; the value names the mode ({@code x}, {@code r}, {@code rd} for a
 * downgrade's read, {@code w}, {@code s <permits> <total>}), then who put it and when ({@link
 * #origin}). Entries are ordered by create revision,
 * which etcd assigns cluster-wide and in commit order: FIFO, and the fencing token. With lock-delay,
 * a holder also puts {@code <ns>//n/d/<acquisition id>} on the lock-delay lease.
 *
 * <p>The put and the read of the queue are one transaction guarded by "the key does not exist yet",
 * so an enqueue retried after a lost reply never creates a second entry, and the exclusive lock
 * learns its predecessor in the same round trip (the two newest keys of the family: itself, and the
 * one before it). A waiter waits only for that predecessor's key to be deleted (through the client's
 * one shared watch, see {@link SharedWatch}), and reads its position again once the watch exists,
 * so a delete between the first read and the watch is still seen; after a delete it reads again (a
 * middle waiter may have left). Semaphore waiters wait for any delete in the family's prefix (any
 * holder leaving may make room), as on ZooKeeper.
 *
 * <p>Data loss ({@link #epoch}): {@code <ns>//#epoch} holds an id and the token offset of the
 * namespace's current data life, {@code <ns>//#fence} (on a lease nobody keeps alive) exists for a
 * lease time after a loss was noticed; every queue read also reads both, so a grant is decided on
 * the same revision as the marker it relies on, and tokens are create revisions plus the offset.
 *
 * <p>Lock-delay (exclusive lock): a grant is reported only after the holder's tombstone key exists
 * (put in a transaction that checks the holder's key still exists); a clean release deletes the
 * entry and the tombstone together. A holder that is lost leaves its tombstone until the lock-delay
 * lease runs out, at least the delay after the main lease, and nobody is granted while a tombstone
 * of another acquisition exists. A holder whose key was deleted from outside while its client and
 * lease live has its tombstone deleted by its client once the delay has passed ({@link
 * #lostWhileLeaseLives}).
 *
 * <p>Forced release ({@code dlock release --force} deletes a holder's key): the client records its
 * grants, takes each out before it sends its own delete, and, once a grant has been held for about
 * 200 ms, uses the shared watch's deletes: a delete of a recorded grant's key at a revision above
 * its create revision is someone else's, and the engine is told at once ({@link
 * EtcdBackend#onForcedRelease}) unless etcd says the lease itself is gone (an expiry, which the
 * lease path reports).
 *
 * <p>Concurrency: every callback runs on jetcd's executor and only completes futures; nothing here
 * blocks. Every transaction is idempotent, so jetcd's own retries are safe.
 */
final class EtcdLockProtocol implements LockProtocol {
    private static final Logger log = LoggerFactory.getLogger(EtcdLockProtocol.class);

    /** What a semaphore waiter waits for: any delete in its family. */
    static final String WATCH_FAMILY = "*";

    private final EtcdBackend backend;
    /** {@link #root}: where this namespace's lock names begin. */
    private final String root;
    /** The namespace's epoch marker ({@link #epoch}); '#' is in no lock name, so no lock's range holds it. */
    private final String epochKey;
    /** The namespace's fence: while it exists nothing is granted ({@link #epoch}). */
    private final String fenceKey;

    private final String ns;
    /** How long a fence this client starts lasts, in seconds: its own lease TTL. */
    private final long quarantineSeconds;
    /** The etcd cluster id this client saw last, or 0. */
    private volatile long clusterId;
    /** The highest token this client has seen: a new epoch's offset starts above it. */
    private final java.util.concurrent.atomic.AtomicLong highWater = new java.util.concurrent.atomic.AtomicLong();
    /** Whether this client is writing a new marker and fence now. */
    private final java.util.concurrent.atomic.AtomicBoolean fencing = new java.util.concurrent.atomic.AtomicBoolean();

    private final boolean lockDelay;
    private final long lockDelayMs;
    /**
     * {@code "<lock name>#<slot>"} of lost holders whose tombstone is still to be deleted: their
     * slot stays taken until then (see {@link #lostWhileLeaseLives}).
     */
    private final Set<String> slotsHeldForTombstones = ConcurrentHashMap.newKeySet();
    /** Pending waits, failed when their lease is lost (their key vanished with it). */
    private final Set<Wait> waits = ConcurrentHashMap.newKeySet();

    EtcdLockProtocol(EtcdBackend backend) {
        this.backend = backend;
        this.ns = backend.uri.namespace();
        this.root = root(ns);
        this.epochKey = root + "#epoch";
        this.fenceKey = root + "#fence";
        this.quarantineSeconds = backend.uri.ttlSeconds();
        this.lockDelay = !backend.uri.lockDelay().isZero();
        this.lockDelayMs = backend.uri.lockDelay().toMillis();
    }

    // ---- keys

    /**
     * The prefix of every lock key of namespace {@code ns}: {@code <ns>//}. A namespace never has an
     * empty segment, so the first {@code //} in a key is where its namespace ends.
     */
    static String root(String ns) {
        return ns + "//";
    }

    /**
     * The family of {@code key} if it is an entry or lock-delay key of lock {@code lockName} under
     * {@code root} ({@code <root><lockName>/<x|rw|s|d>/<id>}, the id not empty and without a slash),
     * else null.
     */
    static @Nullable String familyIn(String root, String lockName, String key) {
        String lock = root + lockName + "/";
        if (!key.startsWith(lock)) {
            return null;
        }
        int slash = key.indexOf('/', lock.length());
        if (slash < 0 || slash == key.length() - 1 || key.indexOf('/', slash + 1) >= 0) {
            return null;
        }
        String family = key.substring(lock.length(), slash);
        return switch (family) {
            case "x", "rw", "s", "d" -> family;
            default -> null;
        };
    }

    static String family(LockMode mode) {
        return switch (mode) {
            case EXCLUSIVE -> "x";
            case READ, WRITE -> "rw";
            case SEMAPHORE -> "s";
        };
    }

    String familyPrefix(String lockName, LockMode mode) {
        return root + lockName + "/" + family(mode) + "/";
    }

    String tombstonePrefix(String lockName) {
        return root + lockName + "/d/";
    }

    static String familyOf(String key) {
        return key.substring(0, key.lastIndexOf('/'));
    }

    /** How many slots an exclusive lock has per client lease; more concurrent entries use their id. */
    static final int SLOTS = 64;

    /** The engine-side keys of slotted exclusive entries: shared, so a held lock costs no key string. */
    private static final String[] SLOT_KEYS = new String[SLOTS];

    static {
        for (int i = 0; i < SLOTS; i++) {
            SLOT_KEYS[i] = "#" + i;
        }
    }

    /** No slot: the entry's etcd key ends in its acquisition id. */
    static final int NO_SLOT = -1;

    /**
     * How many stripes of slot masks a client has (32 KB): enough that 100,000 held locks leave
     * about 25 names per stripe, well under {@link #SLOTS}.
     */
    static final int STRIPES = 4096;

    /**
     * The exclusive slots this client has in use (put in flight, held, or being deleted): bit
     * {@code i} of stripe {@code stripe(name)} is slot {@code i} of every lock name in that stripe.
     * Only a hint that keeps two acquisitions of this client off one key: the put's guard ("key
     * absent") is what makes a collision safe, and whoever deletes a key clears its bit. Names that
     * share a stripe only use different slot numbers (each name's keys are its own). A fixed array
     * rather than a map by lock name: a held lock then costs no map entry (about 45 bytes of W4's
     * heap per held lock); a full stripe makes an entry without a slot, as before.
     */
    private final AtomicLongArray slots = new AtomicLongArray(STRIPES);

    static int stripe(String lockName) {
        int h = lockName.hashCode();
        return (h ^ (h >>> 16)) & (STRIPES - 1);
    }

    /** Takes the lowest free slot of {@code lockName}'s stripe, or {@link #NO_SLOT} if all are in use. */
    int takeSlot(String lockName) {
        int s = stripe(lockName);
        for (int attempt = 0; attempt < SLOTS; attempt++) { // each failed CAS is another slot taken or freed
            long m = slots.get(s);
            int free = Long.numberOfTrailingZeros(~m);
            if (free >= SLOTS) {
                return NO_SLOT;
            }
            if (slots.compareAndSet(s, m, m | (1L << free))) {
                return free;
            }
        }
        return NO_SLOT; // a busy stripe: an entry keyed by its acquisition id is as correct
    }

    void freeSlot(String lockName, int slot) {
        // Every release frees a slot: no key is built unless a tombstone holds one.
        if (slot == NO_SLOT
                || !slotsHeldForTombstones.isEmpty() && slotsHeldForTombstones.contains(heldSlot(lockName, slot))) {
            return;
        }
        slots.getAndAccumulate(stripe(lockName), ~(1L << slot), (m, keep) -> m & keep);
    }

    /** Slots in use, for tests: none once every lock is released. */
    int slotsInUse() {
        int n = 0;
        for (int i = 0; i < STRIPES; i++) {
            n += Long.bitCount(slots.get(i));
        }
        return n;
    }

    /**
     * The etcd key of an exclusive entry: {@code <ns>//<name>/x/<lease hex>-<slot>}. A client reuses
     * its slots, so the keys under a lock stay few: every range over a lock's prefix walks each key
     * etcd ever had there until the cluster is compacted, deleted ones included, so one key per
     * acquisition made every acquire slower than the one before (2.5 ms after 3,000 cycles instead
     * of 0.6 ms). Without a slot, the key ends in the acquisition id.
     */
    String exclusiveKey(String lockName, long leaseId, int slot, String acquisitionId) {
        return familyPrefix(lockName, LockMode.EXCLUSIVE)
                + (slot == NO_SLOT ? acquisitionId : Long.toHexString(leaseId) + "-" + slot);
    }

    /**
     * The entry the engine keeps for an etcd key. An exclusive entry's {@code key} is not its etcd
     * key but {@code #<slot>} (a shared string) or its acquisition id (the string the entry already
     * holds), from which {@link #etcdKey} rebuilds the etcd key with the lock name and the lease:
     * a held lock then costs no key string (about 80 bytes). Read-write and semaphore entries keep
     * their etcd key (a downgrade names its write entry by it).
     */
    static QueueEntry entry(String lockName, String acquisitionId, String etcdKey, long lease, long revision) {
        String key = etcdKey;
        if (familyMode(etcdKey) == LockMode.EXCLUSIVE) {
            String last = etcdKey.substring(etcdKey.lastIndexOf('/') + 1);
            key = last.equals(acquisitionId)
                    ? acquisitionId
                    : SLOT_KEYS[Integer.parseInt(last.substring(last.lastIndexOf('-') + 1))];
        }
        return new QueueEntry(lockName, acquisitionId, key, lease, revision);
    }

    /** Whether {@code entry} is an exclusive lock's (see {@link #entry}). */
    static boolean isExclusive(QueueEntry entry) {
        return entry.key().indexOf('/') < 0;
    }

    /** The slot of an exclusive entry, or {@link #NO_SLOT}. */
    static int slotOf(QueueEntry entry) {
        return entry.key().startsWith("#") ? Integer.parseInt(entry.key().substring(1)) : NO_SLOT;
    }

    /** The etcd key of {@code entry}. */
    String etcdKey(QueueEntry entry) {
        if (!isExclusive(entry)) {
            return entry.key();
        }
        return exclusiveKey(entry.lockName(), entry.session(), slotOf(entry), entry.key());
    }

    /**
     * The exception for an entry that vanished, freeing its slot: the engine stands in the queue
     * again with a new entry, or releases (finds nothing, frees again: harmless, deletes are
     * guarded by the entry's create revision).
     */
    EntryLostException entryLost(QueueEntry entry, String reason) {
        if (isExclusive(entry)) {
            freeSlot(entry.lockName(), slotOf(entry));
        }
        return new EntryLostException(entry, reason);
    }

    /** The lock-delay key that goes with an exclusive entry's etcd key: same last segment, under d/. */
    String tombstoneKey(String lockName, String exclusiveEtcdKey) {
        return tombstonePrefix(lockName) + exclusiveEtcdKey.substring(exclusiveEtcdKey.lastIndexOf('/') + 1);
    }

    static String value(LockRequest r, boolean downgrade) {
        return switch (r.mode()) {
            case EXCLUSIVE -> "x " + r.acquisitionId(); // the key no longer names the acquisition
            case READ -> downgrade ? "rd" : "r";
            case WRITE -> "w";
            case SEMAPHORE -> "s " + r.permits() + " " + r.maxPermits();
        };
    }

    /**
     * What every entry's value carries after its mode, for {@code dlock inspect}: {@code
     * |<pid>@<host>|<put time in epoch ms, base 36>}. Written with the entry, so it costs no request;
     * about 30 bytes per key on the server and nothing in the client's heap.
     */
    static String origin() {
        return Origin.PREFIX + Long.toString(System.currentTimeMillis(), Character.MAX_RADIX);
    }

    /** Resolved once, on the first put: a host name lookup may take a while. */
    private static final class Origin {
        static final String PREFIX = "|" + ProcessHandle.current().pid() + "@" + hostName() + "|";

        private static String hostName() {
            try {
                return java.net.InetAddress.getLocalHost().getHostName().replace('|', '_');
            } catch (java.io.IOException | SecurityException e) {
                return "?";
            }
        }
    }

    /** An entry value's mode part ({@code x <id>}, {@code r}, {@code rd}, {@code w}, {@code s <n> <max>}). */
    static String mode(String value) {
        int bar = value.indexOf('|');
        return bar < 0 ? value : value.substring(0, bar);
    }

    static String mode(KeyValue kv) {
        return mode(string(kv.getValue()));
    }

    static @Nullable LockMode familyMode(String key) {
        String withoutId = key.substring(0, key.lastIndexOf('/'));
        String fam = withoutId.substring(withoutId.lastIndexOf('/') + 1);
        return switch (fam) {
            case "x" -> LockMode.EXCLUSIVE;
            case "rw" -> LockMode.WRITE;
            case "s" -> LockMode.SEMAPHORE;
            default -> null;
        };
    }

    private static final GetOption PREFIX = prefixOption();

    private static GetOption prefixOption() {
        return GetOption.builder()
                .isPrefix(true)
                .withSortField(GetOption.SortTarget.CREATE)
                .withSortOrder(GetOption.SortOrder.ASCEND)
                .build();
    }

    /** The two newest keys of a prefix: an entry just put, and the one right before it. */
    private static final GetOption NEWEST_TWO = newestTwoOption();

    private static GetOption newestTwoOption() {
        return GetOption.builder()
                .isPrefix(true)
                .withSortField(GetOption.SortTarget.CREATE)
                .withSortOrder(GetOption.SortOrder.DESCEND)
                .withLimit(2)
                .withKeysOnly(true)
                .build();
    }

    /** The newest key created before {@code ownRevision}: the predecessor. */
    private static GetOption before(long ownRevision) {
        return GetOption.builder()
                .isPrefix(true)
                .withSortField(GetOption.SortTarget.CREATE)
                .withSortOrder(GetOption.SortOrder.DESCEND)
                .withLimit(1)
                .withKeysOnly(true)
                .withMaxCreateRevision(ownRevision - 1)
                .build();
    }

    private static final GetOption ANY_TWO = anyTwoOption();

    private static GetOption anyTwoOption() {
        return GetOption.builder()
                .isPrefix(true)
                .withLimit(2)
                .withKeysOnly(true)
                .build();
    }

    // ---- the data-loss guard

    /** {@link #epoch}'s answer when grants must wait for the fence to go. */
    static final long FENCED = -1;

    /** The token offset in an epoch marker's value ({@code <id hex> <offset>}), or -1 if it is not one. */
    static long offsetOf(String marker) {
        String[] parts = marker.split(" ", -1);
        if (parts.length != 2 || parts[0].isEmpty()) {
            return -1;
        }
        try {
            long offset = Long.parseLong(parts[1]);
            return offset >= 0 ? offset : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * Judges the epoch marker and the fence, read as the last two reads of {@code r} (the same
     * transaction as the queue read it decides on): the offset to add to create revisions to make
     * tokens, or {@link #FENCED}.
     *
     * <p>Why: etcd restarted without its data (a lost volume, a single member rebuilt) has forgotten
     * every key and lease, and restarts its revisions, while the clients that held locks may count
     * their grants valid for up to a lease time more, and tokens made from the new revisions would be
     * lower than theirs. The marker {@code <ns>//#epoch} (no lease) is lost with the data: whoever finds
     * it missing (or not dlock's, or the cluster id changed) writes a new one, with an id and a token
     * offset above every token it knows of and above the wall clock in microseconds, together with
     * the fence {@code <ns>//#fence} on a lease of its own lease time that nobody keeps alive. Until
     * etcd expires the fence, every entry waits for its deletion; then tokens are create revisions
     * plus the offset. A namespace never used before waits once too: it cannot be told from a lost one.
     */
    private long epoch(TxnResponse r) {
        List<GetResponse> gets = r.getGetResponses();
        List<KeyValue> marker = gets.get(gets.size() - 2).getKvs();
        List<KeyValue> fence = gets.get(gets.size() - 1).getKvs();
        if (!fence.isEmpty()) {
            warnFenced(fence.get(0));
            return FENCED;
        }
        long cluster = r.getHeader().getClusterId();
        long seen = clusterId;
        if (marker.isEmpty()) {
            startFence(
                    null,
                    "its epoch marker " + epochKey + " is missing: etcd may have lost its data (or the"
                            + " namespace is new)");
            return FENCED;
        }
        ByteSequence value = marker.get(0).getValue();
        long offset = offsetOf(string(value));
        if (offset < 0) {
            startFence(value, "its epoch marker " + epochKey + " holds '" + string(value) + "', not dlock's");
            return FENCED;
        }
        if (seen != 0 && cluster != seen) {
            clusterId = cluster; // one fence for one change
            startFence(
                    value,
                    "the etcd cluster id changed from " + Long.toHexString(seen) + " to " + Long.toHexString(cluster));
            return FENCED;
        }
        clusterId = cluster;
        highWater.accumulateAndGet(r.getHeader().getRevision() + offset, Math::max);
        return offset;
    }

    /**
     * Writes a new epoch marker and the fence, if the marker is still {@code expected} (null: absent),
     * so that of several clients only one fences; then has the waits on the fence read again. Never
     * blocks, never throws.
     */
    private void startFence(@Nullable ByteSequence expected, String reason) {
        if (!fencing.compareAndSet(false, true)) {
            return;
        }
        try {
            long offset = Math.max(
                    java.util.concurrent.TimeUnit.MILLISECONDS.toMicros(System.currentTimeMillis()),
                    highWater.get() + 1);
            String id = Long.toHexString(
                    java.util.concurrent.ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
            long until = System.currentTimeMillis() + quarantineSeconds * 1000;
            Cmp unchanged = expected == null
                    ? new Cmp(bytes(epochKey), Cmp.Op.EQUAL, CmpTarget.createRevision(0))
                    : new Cmp(bytes(epochKey), Cmp.Op.EQUAL, CmpTarget.value(expected));
            backend.bounded(backend.client.getLeaseClient().grant(quarantineSeconds))
                    .thenCompose(fenceLease -> txn(
                                    List.of(unchanged),
                                    List.of(
                                            Op.put(bytes(epochKey), bytes(id + " " + offset), PutOption.DEFAULT),
                                            Op.put(
                                                    bytes(fenceKey),
                                                    bytes(until + " " + reason),
                                                    PutOption.builder()
                                                            .withLeaseId(fenceLease.getID())
                                                            .build())),
                                    List.of())
                            .whenComplete((t, e) -> {
                                if (e != null || !t.isSucceeded()) {
                                    // Another client fenced first (or nothing was written): not ours.
                                    backend.client.getLeaseClient().revoke(fenceLease.getID());
                                }
                            }))
                    .whenComplete((t, err) -> {
                        fencing.set(false);
                        if (err == null && t.isSucceeded()) {
                            backend.fences.noticed(
                                    "namespace '" + ns + "'",
                                    quarantineSeconds * 1000,
                                    reason + "; nothing is granted while an old holder may still count its lease"
                                            + " valid, and tokens continue above " + offset);
                            shared.dispatch(fenceKey);
                        } else {
                            if (err != null) {
                                log.debug("[client={}] fencing namespace '{}' failed: {}", EtcdBackend.NAME, ns, err);
                            }
                            // Read again: another client's fence (or a retry of ours), a little later.
                            backend.schedule(() -> shared.dispatch(fenceKey), err == null ? 0 : backoffMillis(1));
                        }
                    });
        } catch (RuntimeException e) {
            fencing.set(false);
            log.debug("[client={}] fencing namespace '{}' failed: {}", EtcdBackend.NAME, ns, e.toString());
        }
    }

    /** Records a fence someone wrote (logged at WARN once by {@link io.dlock.spi.DataLossFences}). */
    private void warnFenced(KeyValue fence) {
        io.dlock.spi.DataLossFence f = fenceOf(ns, string(fence.getValue()));
        backend.fences.noticed(f.scope(), f.until().toEpochMilli() - System.currentTimeMillis(), f.reason());
    }

    /** The fence a {@code <ns>//#fence} value ({@code <until epoch ms> <reason>}) stands for. */
    static io.dlock.spi.DataLossFence fenceOf(String namespace, String value) {
        String scope = "namespace '" + namespace + "'";
        int space = value.indexOf(' ');
        try {
            return new io.dlock.spi.DataLossFence(
                    scope,
                    java.time.Instant.ofEpochMilli(Long.parseLong(value.substring(0, space))),
                    value.substring(space + 1));
        } catch (RuntimeException e) {
            // not written by dlock: it lasts as long as its lease, which only the server knows
            return new io.dlock.spi.DataLossFence(scope, java.time.Instant.now(), "unknown fence '" + value + "'");
        }
    }

    // ---- enqueue

    @Override
    public CompletionStage<Position> enqueue(LockRequest request) {
        CompletableFuture<Position> result = new CompletableFuture<>();
        int[] slot = {request.mode() == LockMode.EXCLUSIVE ? takeSlot(request.lockName()) : NO_SLOT};
        result.whenComplete((p, e) -> {
            if (e != null) {
                freeSlot(request.lockName(), slot[0]); // its key, if the put landed, is the engine's to clean up
            }
        });
        enqueue(request, result, 0, slot);
        return result;
    }

    private void enqueue(LockRequest request, CompletableFuture<Position> result, int attempt, int[] slot) {
        backend.lease().whenComplete((lease, err) -> {
            try {
                if (err != null) {
                    retryOrFail(request, result, attempt, err, slot);
                } else {
                    put(request, lease, result, attempt, slot);
                }
            } catch (RuntimeException e) {
                result.completeExceptionally(e);
            }
        });
    }

    private void put(
            LockRequest request,
            EtcdBackend.EtcdLease lease,
            CompletableFuture<Position> result,
            int attempt,
            int[] slot) {
        String name = request.lockName();
        String key = request.mode() == LockMode.EXCLUSIVE
                ? exclusiveKey(name, lease.id, slot[0], request.acquisitionId())
                : familyPrefix(name, request.mode()) + request.acquisitionId();
        String writeKey = request.mode() == LockMode.READ ? request.grantedDespite() : null;
        boolean downgrade = writeKey != null;
        ByteSequence k = bytes(key);
        List<Cmp> ifs = new ArrayList<>(List.of(new Cmp(k, Cmp.Op.EQUAL, CmpTarget.createRevision(0))));
        if (writeKey != null) {
            // A downgrade's read exists only while its own write entry does (see position()).
            ifs.add(new Cmp(bytes(writeKey), Cmp.Op.GREATER, CmpTarget.createRevision(0)));
        }
        String family = familyPrefix(name, request.mode());
        List<Op> then = new ArrayList<>();
        then.add(Op.put(
                k,
                bytes(value(request, downgrade) + origin()),
                PutOption.builder().withLeaseId(lease.id).build()));
        if (request.mode() == LockMode.EXCLUSIVE) {
            then.add(Op.get(bytes(family), NEWEST_TWO));
            if (lockDelay) {
                then.add(Op.get(bytes(tombstonePrefix(name)), ANY_TWO));
            }
        } else {
            then.add(Op.get(bytes(family), PREFIX));
        }
        then.add(Op.get(bytes(epochKey), GetOption.DEFAULT));
        then.add(Op.get(bytes(fenceKey), GetOption.DEFAULT));
        List<Op> otherwise = new ArrayList<>(List.of(Op.get(k, GetOption.DEFAULT)));
        if (writeKey != null) {
            otherwise.add(Op.get(
                    bytes(writeKey), GetOption.builder().withCountOnly(true).build()));
        }
        txn(ifs, then, otherwise).whenComplete((r, err) -> {
            try {
                if (err != null) {
                    if (EtcdBackend.isLeaseGone(err)) {
                        backend.lost(lease, "etcd lease " + Long.toHexString(lease.id) + " is gone on the server", err);
                    }
                    retryOrFail(request, result, attempt, err, slot);
                    return;
                }
                if (r.isSucceeded()) {
                    long revision = r.getHeader().getRevision();
                    QueueEntry entry = entry(name, request.acquisitionId(), key, lease.id, revision);
                    long offset = epoch(r);
                    if (offset == FENCED) {
                        result.complete(Position.waiting(entry, fenceKey + "@" + revision));
                        return;
                    }
                    if (request.mode() == LockMode.EXCLUSIVE) {
                        List<KeyValue> two = r.getGetResponses().get(0).getKvs();
                        String predecessor = two.size() > 1 ? string(two.get(1).getKey()) : null;
                        String tomb = lockDelay
                                ? foreignTombstone(r.getGetResponses().get(1).getKvs(), tombstoneKey(name, key))
                                : null;
                        settleExclusive(entry, predecessor, tomb, revision, lease, offset, result);
                    } else {
                        complete(result, entry, r.getGetResponses().get(0).getKvs(), revision, lease, offset);
                    }
                    return;
                }
                List<KeyValue> own = r.getGetResponses().get(0).getKvs();
                if (own.isEmpty()) {
                    // Only a downgrade gets here without its key: the write entry is gone; an ordinary read.
                    put(
                            new LockRequest(name, request.acquisitionId(), LockMode.READ, 1, 1, null),
                            lease,
                            result,
                            attempt,
                            slot);
                    return;
                }
                KeyValue kv = own.get(0);
                if (request.mode() == LockMode.EXCLUSIVE
                        && slot[0] != NO_SLOT
                        && !mode(kv).equals(value(request, false))) {
                    // Another acquisition of this client has the slot (the hint was stale): its bit
                    // stays set until that key is deleted; take another slot.
                    slot[0] = takeSlot(name);
                    put(request, lease, result, attempt, slot);
                    return;
                }
                QueueEntry entry = entry(name, request.acquisitionId(), key, kv.getLease(), kv.getCreateRevision());
                if (kv.getLease() == lease.id) {
                    log.debug("[lock={} state=QUEUED] adopted own key {} after a lost reply", name, key);
                    readPosition(entry, result);
                } else {
                    // Ours, but on a lease that is lost: delete it (if still that one) and put again.
                    deleteIf(kv).whenComplete((x, e) -> {
                        try {
                            if (e == null) {
                                enqueue(request, result, attempt, slot);
                            } else {
                                retryOrFail(request, result, attempt, e, slot);
                            }
                        } catch (RuntimeException failed) {
                            result.completeExceptionally(failed);
                        }
                    });
                }
            } catch (RuntimeException e) {
                result.completeExceptionally(e);
            }
        });
    }

    private static @Nullable String foreignTombstone(List<KeyValue> tombstones, String own) {
        for (KeyValue kv : tombstones) {
            String k = string(kv.getKey());
            if (!k.equals(own)) {
                return k;
            }
        }
        return null;
    }

    /** After a failure whose outcome is unknown: adopt our key if this lease has it, else put again. */
    private void retryOrFail(
            LockRequest request, CompletableFuture<Position> result, int attempt, Throwable err, int[] slot) {
        Throwable cause = unwrap(err);
        if (cause instanceof IllegalArgumentException || result.isDone()) {
            result.completeExceptionally(cause);
            return;
        }
        if (attempt + 1 >= maxAttempts() || backend.isClosed()) {
            result.completeExceptionally(
                    failure(request.lockName(), "enqueue failed after " + (attempt + 1) + " attempt(s)", cause));
            return;
        }
        Runnable retry = () -> {
            try {
                findOwnEntry(request.lockName(), request.acquisitionId()).whenComplete((found, e) -> {
                    try {
                        if (e == null && found.isPresent()) {
                            readPosition(found.get(), result);
                        } else if (e == null) {
                            enqueue(request, result, attempt + 1, slot);
                        } else {
                            retryOrFail(request, result, attempt + 1, e, slot);
                        }
                    } catch (RuntimeException failed) {
                        result.completeExceptionally(failed);
                    }
                });
            } catch (RuntimeException failed) {
                result.completeExceptionally(failed);
            }
        };
        if (backend.schedule(retry, backoffMillis(attempt + 1)) == null) {
            result.completeExceptionally(closed(request.lockName()));
        }
    }

    /** The failure of a stage whose retry cannot be scheduled: the client is closing. */
    static LockBackendException closed(String lockName) {
        return new LockBackendException(lockName, EtcdBackend.NAME, "client closed", null);
    }

    /** Where an exclusive entry stands, given its predecessor and, with lock-delay, a foreign tombstone. */
    private void settleExclusive(
            QueueEntry entry,
            @Nullable String predecessor,
            @Nullable String tombstone,
            long revision,
            EtcdBackend.EtcdLease lease,
            long offset,
            CompletableFuture<Position> result) {
        if (predecessor != null) {
            result.complete(Position.waiting(entry, predecessor + "@" + revision));
        } else if (tombstone != null) {
            result.complete(Position.waiting(entry, tombstone + "@" + revision));
        } else if (lockDelay) {
            writeTombstone(entry, lease, offset, result);
        } else {
            result.complete(Position.granted(grant(entry, lease, offset)));
        }
    }

    /**
     * Puts the holder's tombstone while its entry exists; only then is the grant reported. If the
     * lease is lost while the put is in flight, there is no grant: the entry is lost (the engine
     * stands in the queue again), and the tombstone and the entry are taken back, since nobody was
     * ever told it held the lock.
     */
    private void writeTombstone(
            QueueEntry entry, EtcdBackend.EtcdLease lease, long offset, CompletableFuture<Position> result) {
        String key = etcdKey(entry);
        ByteSequence tomb = bytes(tombstoneKey(entry.lockName(), key));
        txn(
                        List.of(new Cmp(bytes(key), Cmp.Op.EQUAL, CmpTarget.createRevision(entry.token()))),
                        List.of(Op.put(
                                tomb,
                                bytes("d"),
                                PutOption.builder().withLeaseId(lease.delayId).build())),
                        List.of())
                .whenComplete((r, err) -> {
                    // Every outcome completes the result: it is the acquisition's only way on.
                    try {
                        if (err != null) {
                            result.completeExceptionally(failure(entry.lockName(), "writing the lock-delay key", err));
                            return;
                        }
                        if (!r.isSucceeded()) {
                            result.completeExceptionally(entryLost(entry, "its key is gone"));
                            return;
                        }
                        Grant g;
                        try {
                            g = grant(entry, lease, offset);
                        } catch (EntryLostException lost) {
                            takeBack(entry, key, tomb, r.getHeader().getRevision());
                            result.completeExceptionally(lost);
                            return;
                        }
                        result.complete(Position.granted(g));
                    } catch (RuntimeException e) {
                        result.completeExceptionally(e);
                    }
                });
    }

    /**
     * Deletes what an acquisition that was never granted wrote: its tombstone (only the one put at
     * {@code tombRevision}) and its entry (only its own generation; gone already if the lost
     * lease's revoke reached etcd). Best effort and never blocks: whatever stays runs out with its
     * lease.
     */
    private void takeBack(QueueEntry entry, String key, ByteSequence tomb, long tombRevision) {
        List<CompletableFuture<TxnResponse>> deletes = List.of(
                txn(
                        List.of(new Cmp(tomb, Cmp.Op.EQUAL, CmpTarget.modRevision(tombRevision))),
                        List.of(Op.delete(tomb, DeleteOption.DEFAULT)),
                        List.of()),
                txn(
                        List.of(new Cmp(bytes(key), Cmp.Op.EQUAL, CmpTarget.createRevision(entry.token()))),
                        List.of(Op.delete(bytes(key), DeleteOption.DEFAULT)),
                        List.of()));
        for (CompletableFuture<TxnResponse> d : deletes) {
            d.whenComplete((x, err) -> {
                if (err != null) {
                    log.debug(
                            "[lock={} state=QUEUED] taking back {} after its lease was lost: {}; it runs out with"
                                    + " its lease",
                            entry.lockName(),
                            key,
                            err.toString());
                }
            });
        }
    }

    /** The grant of {@code entry}: its token is its create revision plus the epoch's offset. */
    private Grant grant(QueueEntry entry, EtcdBackend.EtcdLease lease, long offset) {
        if (!lease.alive) {
            throw entryLost(entry, "its lease is lost");
        }
        granted(entry);
        return new Grant(entry, entry.token() + offset, lease.confirmedUntil);
    }

    private void complete(
            CompletableFuture<Position> result,
            QueueEntry entry,
            List<KeyValue> family,
            long revision,
            EtcdBackend.EtcdLease lease,
            long offset) {
        try {
            result.complete(position(entry, family, revision, lease, offset));
        } catch (EntryLostException | IllegalArgumentException e) {
            if (e instanceof IllegalArgumentException) {
                // A semaphore total that disagrees: take the entry back, change nothing.
                release(entry).whenComplete((x, err) -> result.completeExceptionally(e));
            } else {
                result.completeExceptionally(e);
            }
        }
    }

    /**
     * The permits and the total of a semaphore entry's mode ({@code s <permits> <total>}, 1 &le;
     * permits &le; total), or null for anything else.
     */
    static int @Nullable [] semaphore(String mode) {
        String[] v = mode.split(" ", -1);
        if (v.length != 3 || !v[0].equals("s")) {
            return null;
        }
        try {
            int permits = Integer.parseInt(v[1]);
            int total = Integer.parseInt(v[2]);
            return permits >= 1 && permits <= total ? new int[] {permits, total} : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /** Whether {@code mode} is one dlock writes in family {@code family} ({@code rw} or {@code s}). */
    static boolean isEntryMode(String family, String mode) {
        return family.equals("rw")
                ? mode.equals("r") || mode.equals("rd") || mode.equals("w")
                : family.equals("s") && semaphore(mode) != null;
    }

    /**
     * The entries of {@code read} (a range over the family of {@code entry}) that dlock wrote: a key
     * of another shape or a value of another mode (put by hand, or by something else sharing the
     * prefix) is skipped, so it can neither break the queue nor count in it.
     */
    private List<KeyValue> entriesOf(QueueEntry entry, List<KeyValue> read) {
        String family = family(java.util.Objects.requireNonNull(familyMode(entry.key()), entry.key()));
        List<KeyValue> out = new ArrayList<>(read.size());
        for (KeyValue kv : read) {
            String key = string(kv.getKey());
            if (family.equals(familyIn(root, entry.lockName(), key)) && isEntryMode(family, mode(kv))) {
                out.add(kv);
            } else {
                log.debug(
                        "[lock={} state=QUEUED] skipping {} = '{}': not an entry dlock wrote",
                        entry.lockName(),
                        key,
                        string(kv.getValue()));
            }
        }
        return out;
    }

    /** Where a read-write or semaphore entry stands among its family (sorted by create revision). */
    private Position position(
            QueueEntry entry, List<KeyValue> read, long revision, EtcdBackend.EtcdLease lease, long offset) {
        List<KeyValue> family = entriesOf(entry, read);
        int at = -1;
        for (int i = 0; i < family.size(); i++) {
            if (string(family.get(i).getKey()).equals(entry.key())) {
                at = i;
                break;
            }
        }
        if (at < 0) {
            throw entryLost(entry, "its key is no longer in etcd");
        }
        String own = mode(family.get(at));
        String waitFor = null;
        if (own.equals("w")) {
            waitFor = at > 0 ? string(family.get(at - 1).getKey()) : null;
            if (waitFor == null) {
                // A writer also waits for a downgrade's read behind it: that reader is inside.
                for (KeyValue kv : family) {
                    if (mode(kv).equals("rd")) {
                        waitFor = string(kv.getKey());
                        break;
                    }
                }
            }
        } else if (own.equals("r")) {
            for (int i = at - 1; i >= 0; i--) {
                if (mode(family.get(i)).equals("w")) {
                    waitFor = string(family.get(i).getKey());
                    break;
                }
            }
        } else if (own.startsWith("s ")) {
            int[] mine = java.util.Objects.requireNonNull(semaphore(own), own);
            int max = mine[1];
            long taken = 0;
            for (int i = 0; i < family.size(); i++) {
                int[] v = java.util.Objects.requireNonNull(semaphore(mode(family.get(i))));
                if (v[1] != max) {
                    throw new IllegalArgumentException("semaphore '" + entry.lockName() + "' on etcd is in use with "
                            + v[1] + " permits; this client opened it with " + max);
                }
                if (i < at) {
                    taken += v[0];
                }
            }
            waitFor = taken + mine[0] <= max ? null : WATCH_FAMILY;
        } // "rd": a downgrade's read is granted
        return waitFor == null
                ? Position.granted(grant(entry, lease, offset))
                : Position.waiting(entry, waitFor + "@" + revision);
    }

    // ---- waiting

    /** One pending wait: its future, and what it waits to see deleted. */
    private final class Wait {
        final QueueEntry entry;
        final CompletableFuture<Position> result;
        /** The key (or, for a semaphore, the family prefix) whose delete this wait reads again on. */
        volatile @Nullable String watched;

        Wait(QueueEntry entry, CompletableFuture<Position> result) {
            this.entry = entry;
            this.result = result;
        }

        void finish() {
            waits.remove(this);
            String k = watched;
            if (k != null) {
                shared.unregister(k, this);
            }
        }
    }

    /**
     * The client's one etcd watch, on the deletes under its namespace, shared by every wait: a wait
     * registers the key it waits for and is told when that key is deleted. Not a watch per wait:
     * jetcd 0.8 gives each watch its own gRPC stream and, on {@code close()}, sends a cancel and
     * only half-closes that stream, which etcd 3.4 keeps open until the call is cancelled, so every
     * closed watch stayed open on both ends with ~1.5 KB of client heap until the connection
     * closed. Created on the first wait, or once a grant has been held for about 200 ms (its
     * deletes then also tell a holder that its key was removed by someone else: see the forced
     * releases section), and kept until the client closes. The price: each client
     * that has waited is sent every delete under the namespace (a few dozen bytes each), not only
     * its predecessors'; only the waits on the deleted key read again, so there is still no herd
     * of requests.
     *
     * <p>A wait registers before it reads its position, and reads only once the watch exists, so a
     * delete is either in that read or delivered to the wait. jetcd resumes the watch after a
     * transient error from its last revision; if it ends instead (compaction past that revision,
     * or an end we did not ask for), a new one is made and every wait reads its position again.
     */
    private final class SharedWatch {
        private final ConcurrentHashMap<String, Set<Wait>> byKey = new ConcurrentHashMap<>();
        /** Guarded by this. */
        private Watch.@Nullable Watcher watcher;
        /**
         * Completes once etcd created {@link #watcher}, with the revision it watches after (every
         * delete at a higher revision is delivered); null before the first use. Guarded by this.
         */
        private @Nullable CompletableFuture<Long> created;

        void register(String key, Wait w) {
            byKey.computeIfAbsent(key, k -> ConcurrentHashMap.newKeySet()).add(w);
        }

        void unregister(String key, Wait w) {
            byKey.computeIfPresent(key, (k, set) -> {
                set.remove(w);
                return set.isEmpty() ? null : set;
            });
        }

        /**
         * Completes once the watch exists, with the revision it watches after; makes it on the first
         * call. Never blocks.
         */
        synchronized CompletableFuture<Long> ready() {
            CompletableFuture<Long> c = created;
            if (c == null || c.isCompletedExceptionally()) {
                c = start();
            }
            return c;
        }

        /** Makes a new watch, replacing the current one. Guarded by this. */
        private CompletableFuture<Long> start() {
            CompletableFuture<Long> c = new CompletableFuture<>();
            created = c;
            if (backend.isClosed()) {
                c.completeExceptionally(new LockBackendException(null, EtcdBackend.NAME, "client closed", null));
                return c;
            }
            Watch.Watcher[] self = new Watch.Watcher[1];
            try {
                self[0] = backend.client
                        .getWatchClient()
                        .watch(
                                bytes(root),
                                WatchOption.builder()
                                        .isPrefix(true)
                                        .withNoPut(true)
                                        .withCreateNotify(true)
                                        .build(),
                                Watch.listener(
                                        response -> {
                                            if (response.isCreatedNotify()) {
                                                c.complete(response.getHeader().getRevision());
                                                return;
                                            }
                                            for (WatchEvent event : response.getEvents()) {
                                                if (event.getEventType() == WatchEvent.EventType.DELETE) {
                                                    KeyValue kv = event.getKeyValue();
                                                    String key = string(kv.getKey());
                                                    deleted(key);
                                                    deletedAt(key, kv.getModRevision());
                                                }
                                            }
                                        },
                                        error -> {
                                            // jetcd resumes after transient errors without a gap; a
                                            // compaction past its revision is a gap.
                                            if (String.valueOf(error.getMessage())
                                                    .contains("compact")) {
                                                restart(self[0], error);
                                            }
                                        },
                                        () -> restart(self[0], null)));
            } catch (RuntimeException e) {
                c.completeExceptionally(failure(null, "watching " + root, e));
                return c;
            }
            watcher = self[0];
            return c;
        }

        private void deleted(String key) {
            dispatch(key);
            int slash = key.lastIndexOf('/');
            if (slash > 0) {
                dispatch(key.substring(0, slash + 1)); // semaphore waits watch their family
            }
        }

        private void dispatch(String key) {
            Set<Wait> set = byKey.get(key);
            if (set != null) {
                for (Wait w : set) {
                    if (!w.result.isDone()) {
                        readPosition(w.entry, w.result);
                    }
                }
            }
        }

        /** The watch {@code ended} ended or missed events: a new one, and every wait reads again. */
        private void restart(Watch.@Nullable Watcher ended, @Nullable Throwable why) {
            CompletableFuture<Long> next;
            synchronized (this) {
                if (ended == null || watcher != ended || backend.isClosed()) {
                    return; // ours closed it, or it was replaced already
                }
                log.debug("[client={}] the shared watch ended ({}); watching again", EtcdBackend.NAME, why);
                watcher = null;
                ended.close();
                next = start();
            }
            next.whenComplete((from, err) -> {
                watchRestarted(from, err);
                for (Wait w : waits) {
                    if (err != null) {
                        w.result.completeExceptionally(failure(w.entry.lockName(), "watching " + root, err));
                    } else {
                        readPosition(w.entry, w.result);
                    }
                }
            });
        }

        void close() {
            Watch.Watcher w;
            synchronized (this) {
                w = watcher;
                watcher = null;
            }
            if (w != null) {
                w.close();
            }
        }
    }

    private final SharedWatch shared = new SharedWatch();

    /** How many waits have waited through {@link #shared}, for tests. */
    private final java.util.concurrent.atomic.LongAdder watchedWaits = new java.util.concurrent.atomic.LongAdder();

    long watchedWaits() {
        return watchedWaits.sum();
    }

    /** How many watches this client keeps open on etcd, for tests: 1 once it has waited, else 0. */
    int openWatches() {
        synchronized (shared) {
            return shared.watcher == null ? 0 : 1;
        }
    }

    @Override
    public CompletionStage<Position> awaitTurn(Position waiting) {
        CompletableFuture<Position> result = new CompletableFuture<>();
        QueueEntry entry = waiting.entry();
        if (backend.lease(entry.session()) == null) {
            result.completeExceptionally(entryLost(entry, "its lease is lost"));
            return result;
        }
        String p =
                java.util.Objects.requireNonNull(waiting.predecessor(), "a waiting position names what it waits for");
        String target = p.substring(0, p.lastIndexOf('@'));
        Wait wait = new Wait(entry, result);
        waits.add(wait);
        result.whenComplete((x, e) -> wait.finish());
        String key = target.equals(WATCH_FAMILY) ? familyOf(etcdKey(entry)) + "/" : target;
        wait.watched = key;
        shared.register(key, wait);
        watchedWaits.increment();
        if (result.isDone()) {
            wait.finish(); // completed (lease lost, client closed) before it registered
            return result;
        }
        // Once the watch exists: a delete before this read is in it, a delete after it is delivered.
        shared.ready().whenComplete((x, err) -> {
            try {
                if (err != null) {
                    result.completeExceptionally(failure(entry.lockName(), "watching " + key, err));
                } else {
                    recheck(entry, target, result);
                }
            } catch (RuntimeException e) {
                result.completeExceptionally(e);
            }
        });
        return result;
    }

    /**
     * Reads the position once the watch exists: completes {@code result} if the entry is granted,
     * lost, or now waits for something else; otherwise the watch made before this read sees the
     * target go.
     */
    private void recheck(QueueEntry entry, String target, CompletableFuture<Position> result) {
        CompletableFuture<Position> probe = new CompletableFuture<>();
        readPosition(entry, probe);
        probe.whenComplete((now, err) -> {
            try {
                if (err != null) {
                    result.completeExceptionally(unwrap(err));
                } else if (now.isGranted()
                        || !java.util.Objects.requireNonNull(now.predecessor()).startsWith(target + "@")) {
                    result.complete(now);
                }
            } catch (RuntimeException e) {
                result.completeExceptionally(e);
            }
        });
    }

    /** Reads the queue again and reports where {@code entry} stands now. */
    private void readPosition(QueueEntry entry, CompletableFuture<Position> result) {
        readPosition(entry, result, 0);
    }

    /**
     * Never throws: whatever goes wrong completes {@code result}, which may be a waiter's only way
     * on (it also runs from the shared watch's listener and from timer tasks).
     */
    private void readPosition(QueueEntry entry, CompletableFuture<Position> result, int attempt) {
        try {
            readPositionOnce(entry, result, attempt);
        } catch (RuntimeException e) {
            result.completeExceptionally(e);
        }
    }

    private void readPositionOnce(QueueEntry entry, CompletableFuture<Position> result, int attempt) {
        if (result.isDone()) {
            return;
        }
        EtcdBackend.EtcdLease lease = backend.lease(entry.session());
        if (lease == null) {
            result.completeExceptionally(entryLost(entry, "its lease is lost"));
            return;
        }
        String key = etcdKey(entry);
        LockMode fam = familyMode(key);
        String family = familyOf(key) + "/";
        List<Op> reads = new ArrayList<>();
        reads.add(Op.get(bytes(key), GetOption.builder().withKeysOnly(true).build()));
        if (fam == LockMode.EXCLUSIVE) {
            reads.add(Op.get(bytes(family), before(entry.token())));
            if (lockDelay) {
                reads.add(Op.get(bytes(tombstonePrefix(entry.lockName())), ANY_TWO));
            }
        } else {
            reads.add(Op.get(bytes(family), PREFIX));
        }
        reads.add(Op.get(bytes(epochKey), GetOption.DEFAULT));
        reads.add(Op.get(bytes(fenceKey), GetOption.DEFAULT));
        txn(List.of(), reads, List.of()).whenComplete((r, err) -> {
            if (err != null) {
                if (attempt + 1 >= maxAttempts() || backend.isClosed()) {
                    result.completeExceptionally(failure(entry.lockName(), "reading the queue", err));
                } else if (backend.schedule(() -> readPosition(entry, result, attempt + 1), backoffMillis(attempt + 1))
                        == null) {
                    result.completeExceptionally(closed(entry.lockName()));
                }
                return;
            }
            try {
                List<GetResponse> gets = r.getGetResponses();
                if (gets.get(0).getKvs().isEmpty()) {
                    result.completeExceptionally(entryLost(entry, "its key is no longer in etcd"));
                    return;
                }
                long revision = r.getHeader().getRevision();
                long offset = epoch(r);
                if (offset == FENCED) {
                    result.complete(Position.waiting(entry, fenceKey + "@" + revision));
                    return;
                }
                if (fam == LockMode.EXCLUSIVE) {
                    List<KeyValue> before = gets.get(1).getKvs();
                    String predecessor =
                            before.isEmpty() ? null : string(before.get(0).getKey());
                    String tomb = lockDelay
                            ? foreignTombstone(gets.get(2).getKvs(), tombstoneKey(entry.lockName(), key))
                            : null;
                    settleExclusive(entry, predecessor, tomb, revision, lease, offset, result);
                } else {
                    complete(result, entry, gets.get(1).getKvs(), revision, lease, offset);
                }
            } catch (RuntimeException e) {
                result.completeExceptionally(e);
            }
        });
    }

    /** Fails every wait on {@code lease}: its keys are gone, and the engine enqueues again. */
    void leaseLost(EtcdBackend.EtcdLease lease, String reason) {
        for (Wait w : waits) {
            if (w.entry.session() == lease.id) {
                w.result.completeExceptionally(entryLost(w.entry, reason));
            }
        }
    }

    void close() {
        shared.close();
        for (Wait w : waits) {
            w.result.completeExceptionally(
                    new LockBackendException(w.entry.lockName(), EtcdBackend.NAME, "client closed", null));
        }
    }

    // ---- forced releases

    /**
     * How long a grant must have been held before the client starts its shared watch for forced
     * deletes: holds shorter than this (the uncontended cycle, W1) send nothing for it. Counted in
     * {@link #FORCED_SWEEP_MILLIS} sweeps: a grant is looked at on the second sweep after it was
     * made, so after 200 to 300 ms.
     */
    static final int FORCED_SWEEPS = 2;

    static final long FORCED_SWEEP_MILLIS = 100;

    /**
     * This client's grants, by lock name (the engine's own name string: a held lock costs one map
     * node, no key string): a {@link QueueEntry}, or a {@code QueueEntry[]} for several (readers,
     * semaphore permits). {@link #release} takes a grant out before it sends its delete, so a
     * delete event for a key whose grant is still here, at a revision above the grant's create
     * revision, is not the client's own release: a client reuses its slot keys, and an event for
     * its own earlier release arrives after the next grant of the same key, whose create revision
     * is higher than that delete's.
     */
    private final ConcurrentHashMap<String, Object> held = new ConcurrentHashMap<>();

    /**
     * The revision after which the shared watch delivers every delete, once it is used for forced
     * deletes; -1 before (no grant has been held long enough yet, or the watch ended and could not
     * be made again).
     */
    private volatile long armedFrom = -1;

    private final java.util.concurrent.atomic.AtomicBoolean arming = new java.util.concurrent.atomic.AtomicBoolean();
    /** Whether a sweep should arm again whatever the age of the grants (a failed arm). */
    private volatile boolean armAgain;

    /** Grants made since the last sweep, while not armed. */
    private final java.util.concurrent.ConcurrentLinkedQueue<QueueEntry> young =
            new java.util.concurrent.ConcurrentLinkedQueue<>();
    /** Grants of earlier sweeps, youngest first; only the timer thread touches it. */
    private final java.util.ArrayDeque<List<QueueEntry>> ageing = new java.util.ArrayDeque<>();

    private final java.util.concurrent.atomic.AtomicBoolean sweeping = new java.util.concurrent.atomic.AtomicBoolean();
    /** The lease checks in flight, by lease id: a lease that expired deletes all its keys at once. */
    private final ConcurrentHashMap<Long, CompletableFuture<Boolean>> leaseChecks = new ConcurrentHashMap<>();

    /** The engine's listener for forced releases ({@link EtcdBackend#onForcedRelease}). */
    volatile java.util.function.Consumer<QueueEntry> forcedListener = e -> {};

    /** Records a grant; checks it at once if the watch already runs but may have missed its delete. */
    private void granted(QueueEntry entry) {
        held.compute(entry.lockName(), (name, v) -> {
            if (v == null) {
                return entry;
            }
            QueueEntry[] all = v instanceof QueueEntry e ? new QueueEntry[] {e} : (QueueEntry[]) v;
            for (QueueEntry e : all) {
                if (e.equals(entry)) {
                    return v; // granted again by a second read of the same position
                }
            }
            QueueEntry[] more = java.util.Arrays.copyOf(all, all.length + 1);
            more[all.length] = entry;
            return more;
        });
        long from = armedFrom;
        if (from < 0) {
            young.add(entry);
            startSweep();
        } else if (entry.token() < from) {
            checkGrant(entry); // put before the watch started: a delete before it is not delivered
        }
    }

    /** Takes a grant out; whether it was there (false: released or reported already). */
    private boolean forget(QueueEntry entry) {
        boolean[] removed = {false};
        held.computeIfPresent(entry.lockName(), (name, v) -> {
            if (v instanceof QueueEntry e) {
                removed[0] = e.equals(entry);
                return removed[0] ? null : v;
            }
            QueueEntry[] all = (QueueEntry[]) v;
            List<QueueEntry> rest = new ArrayList<>(all.length);
            for (QueueEntry e : all) {
                if (!removed[0] && e.equals(entry)) {
                    removed[0] = true;
                } else {
                    rest.add(e);
                }
            }
            return rest.size() == 1 ? rest.get(0) : rest.toArray(new QueueEntry[0]);
        });
        return removed[0];
    }

    private boolean isHeld(QueueEntry entry) {
        Object v = held.get(entry.lockName());
        if (v instanceof QueueEntry e) {
            return e.equals(entry);
        }
        return v != null && java.util.Arrays.asList((QueueEntry[]) v).contains(entry);
    }

    private void startSweep() {
        if (!sweeping.get() && sweeping.compareAndSet(false, true)) {
            if (backend.schedule(this::sweep, FORCED_SWEEP_MILLIS) == null) {
                sweeping.set(false); // closing
            }
        }
    }

    /**
     * Arms the forced-delete watch once a grant has been held for {@link #FORCED_SWEEPS} sweeps;
     * runs every {@link #FORCED_SWEEP_MILLIS} until armed or no grant is young. Never throws (a
     * timer task).
     */
    private void sweep() {
        try {
            if (armedFrom >= 0 || backend.isClosed()) {
                young.clear();
                ageing.clear();
                return;
            }
            List<QueueEntry> fresh = new ArrayList<>();
            for (QueueEntry e; (e = young.poll()) != null; ) {
                fresh.add(e);
            }
            ageing.addFirst(fresh);
            boolean ripe = armAgain && !held.isEmpty();
            if (ageing.size() > FORCED_SWEEPS) {
                for (QueueEntry e : ageing.removeLast()) {
                    if (isHeld(e)) {
                        ripe = true;
                        break;
                    }
                }
            }
            if (ripe) {
                arm();
            }
        } catch (RuntimeException e) {
            log.warn("[client={}] forced-release sweep failed", EtcdBackend.NAME, e);
        } finally {
            sweeping.set(false);
            if (armedFrom < 0
                    && !backend.isClosed()
                    && (!young.isEmpty() || ageing.stream().anyMatch(l -> !l.isEmpty()) || armAgain)) {
                startSweep();
            } else if (armedFrom >= 0) {
                ageing.clear();
            }
        }
    }

    /**
     * Starts the shared watch (if no wait has) and uses its deletes from now on: one watch for the
     * client, not one per grant, so 20,000 held locks cost no more than one. The grants made before
     * the revision it watches after are checked once, since a delete before it is not delivered.
     */
    private void arm() {
        if (!arming.compareAndSet(false, true)) {
            return;
        }
        armAgain = false;
        shared.ready().whenComplete((from, err) -> {
            arming.set(false);
            if (err != null) {
                log.debug("[client={}] watching for forced releases failed: {}", EtcdBackend.NAME, err.toString());
                armAgain = true; // the next sweep tries again; renewals check the keys meanwhile
                startSweep();
            } else {
                armAt(from);
            }
        });
    }

    /**
     * The shared watch ended and was made again (from its new revision), or could not be: deletes
     * in between were not delivered.
     */
    private void watchRestarted(@Nullable Long from, @Nullable Throwable err) {
        if (armedFrom < 0) {
            return; // not used for forced deletes (yet)
        }
        if (err != null || from == null) {
            armedFrom = -1;
            armAgain = true;
            startSweep();
        } else {
            armAt(from);
        }
    }

    /** The watch now delivers the deletes after {@code from}: checks the grants made before it. */
    private void armAt(long from) {
        armedFrom = from;
        for (Object v : held.values()) {
            for (QueueEntry e : v instanceof QueueEntry one ? new QueueEntry[] {one} : (QueueEntry[]) v) {
                if (e.token() < from) {
                    checkGrant(e);
                }
            }
        }
    }

    /** Asks etcd whether a grant's key is still there (batched with the renewals' checks). */
    private void checkGrant(QueueEntry entry) {
        EtcdBackend.EtcdLease lease = backend.lease(entry.session());
        if (lease == null) {
            return;
        }
        backend.checkKey(lease, bytes(etcdKey(entry)), entry.token()).whenComplete((state, err) -> {
            if (state == EtcdBackend.KeyState.GONE) {
                removedFromOutside(entry, "its key was gone when the client began watching for forced releases");
            } // an error: the renewal checks it again
        });
    }

    /**
     * A delete the shared watch delivered: a grant of this client whose key it is, made before
     * {@code revision}, and not released by this client, was removed by someone else. Never blocks;
     * called on jetcd's executor.
     */
    private void deletedAt(String key, long revision) {
        if (armedFrom < 0 || held.isEmpty()) {
            return;
        }
        int slash = key.indexOf('/', root.length());
        if (slash < 0 || !key.startsWith(root)) {
            return;
        }
        Object v = held.get(key.substring(root.length(), slash));
        if (v == null) {
            return;
        }
        for (QueueEntry e : v instanceof QueueEntry one ? new QueueEntry[] {one} : (QueueEntry[]) v) {
            if (e.token() < revision && etcdKey(e).equals(key)) {
                removedFromOutside(e, "its key was deleted at revision " + revision + " by someone else");
            }
        }
    }

    /**
     * A grant whose key someone else deleted. If its lease is gone on the server, the keys went
     * with it (an expiry): the lease path reports that, as a lost lease, within a keep-alive tick.
     * Otherwise an operator (or anyone) removed the grant, and the engine is told now.
     */
    private void removedFromOutside(QueueEntry entry, String how) {
        if (!forget(entry) || backend.isClosed()) {
            return; // released by this client, or told already
        }
        EtcdBackend.EtcdLease lease = backend.lease(entry.session());
        if (lease == null) {
            return; // lost with its lease: the engine heard so
        }
        leaseAlive(lease).whenComplete((alive, err) -> {
            if (Boolean.FALSE.equals(alive) || !lease.alive || backend.isClosed()) {
                return;
            }
            log.debug("[lock={} state=HELD] {}: released by force", entry.lockName(), how);
            if (lockDelay && isExclusive(entry)) {
                lostWhileLeaseLives(entry, how); // its tombstone must not outlive the delay
            }
            try {
                forcedListener.accept(entry);
            } catch (RuntimeException e) {
                log.warn("[lock={} state=HELD] forced-release listener failed", entry.lockName(), e);
            }
        });
    }

    /**
     * Whether etcd still has {@code lease}: false if it answers that the lease is gone, true if it
     * has it or cannot be asked (the key is gone and not by this client: the holder is told rather
     * than left to its next renewal). One request per lease at a time.
     */
    private CompletableFuture<Boolean> leaseAlive(EtcdBackend.EtcdLease lease) {
        CompletableFuture<Boolean> mine = new CompletableFuture<>();
        CompletableFuture<Boolean> asked = leaseChecks.putIfAbsent(lease.id, mine);
        if (asked != null) {
            return asked;
        }
        try {
            backend.bounded(backend.client
                            .getLeaseClient()
                            .timeToLive(lease.id, io.etcd.jetcd.options.LeaseOption.DEFAULT))
                    .whenComplete(
                            (r, err) -> mine.complete(err == null ? r.getTTL() >= 0 : !EtcdBackend.isLeaseGone(err)));
        } catch (RuntimeException e) {
            mine.complete(true);
        }
        mine.whenComplete((x, e) -> leaseChecks.remove(lease.id, mine));
        return mine;
    }

    // ---- renew

    /**
     * Sends nothing for the grant itself. The client keeps its one lease alive (the keep-alive moves
     * {@code confirmedUntil}), so a grant is as valid as the newest confirmed keep-alive of its
     * lease, and it is held while its key is still attached to that lease. The validity is read once
     * the key check has answered, not before: it is the keep-alive's send time plus the TTL (the
     * ticker read before that keep-alive was sent), so it never outlives etcd's copy whenever it is
     * read, and read late it does not lag the lease by the key check's round trip.
     * The renewals of one renewal tick share a few transactions of keys-only reads, at most {@link
     * EtcdBackend#DEFAULT_MAX_TXN_OPS} keys each ({@link EtcdBackend#checkKey}): a key deleted behind
     * dlock's back, or replaced (another generation, another lease), loses that grant only. A lease
     * that is gone takes its keys with it, so every grant on it is lost (the keep-alive also notices
     * that within a second). A check etcd refuses for good is logged at WARN and leaves the grant as
     * valid as its lease, rather than failing every renewal until every lock is lost.
     */
    @Override
    public CompletionStage<Grant> renew(Grant grant) {
        QueueEntry entry = grant.entry();
        EtcdBackend.EtcdLease lease = backend.lease(entry.session());
        if (lease == null) {
            return CompletableFuture.failedFuture(entryLost(entry, "its etcd lease is lost"));
        }
        ByteSequence key = bytes(etcdKey(entry));
        return backend.checkKey(lease, key, entry.token()).thenApply(state -> {
            if (state == EtcdBackend.KeyState.GONE) {
                forget(entry); // the engine hears it from this renewal
                throw lostWhileLeaseLives(entry, "its key " + string(key) + " is no longer in etcd on lease " + lease);
            }
            if (!lease.alive) {
                throw entryLost(entry, "its etcd lease is lost");
            }
            return new Grant(entry, grant.fencingToken(), lease.confirmedUntil);
        });
    }

    /**
     * A granted entry whose key was deleted from outside while its lease lives (the lease and its
     * keep-alives are fine). With lock-delay, its tombstone is on the lock-delay lease, which this
     * client keeps alive: left alone it would keep everyone else waiting for as long as this client
     * lives. It is deleted once the delay has passed since the loss was seen instead. Until then the
     * entry's slot stays taken, so that this client's own next acquisitions of the lock use another
     * key and wait out the tombstone as a foreign one; a client that dies first leaves it to its
     * lease, as any lost holder does.
     */
    private EntryLostException lostWhileLeaseLives(QueueEntry entry, String reason) {
        if (!lockDelay || !isExclusive(entry)) {
            return entryLost(entry, reason);
        }
        String name = entry.lockName();
        int slot = slotOf(entry);
        String tomb = tombstoneKey(name, etcdKey(entry));
        if (slot != NO_SLOT && !slotsHeldForTombstones.add(heldSlot(name, slot))) {
            return new EntryLostException(entry, reason); // its deletion is scheduled already
        }
        log.debug("[lock={} state=LOST] its key was deleted from outside; {} goes in {} ms", name, tomb, lockDelayMs);
        if (backend.schedule(() -> deleteTombstone(name, slot, tomb, 0), lockDelayMs) == null) {
            releaseSlotHeldForTombstone(name, slot); // the client closes: revoking its leases deletes it
        }
        return new EntryLostException(entry, reason);
    }

    /** Never throws (a timer task); frees the slot once the tombstone is gone or given up on. */
    private void deleteTombstone(String name, int slot, String tomb, int attempt) {
        try {
            if (backend.isClosed()) {
                releaseSlotHeldForTombstone(name, slot);
                return;
            }
            // Unconditional: the slot is this client's and held, so nobody else puts this key.
            txn(List.of(), List.of(Op.delete(bytes(tomb), DeleteOption.DEFAULT)), List.of())
                    .whenComplete((r, err) -> {
                        if (err == null) {
                            releaseSlotHeldForTombstone(name, slot);
                        } else if (attempt + 1 >= maxAttempts() * 4) {
                            log.warn(
                                    "[lock={} state=LOST] could not delete {}: {}; it goes with the lock-delay"
                                            + " lease",
                                    name,
                                    tomb,
                                    err.toString());
                            releaseSlotHeldForTombstone(name, slot);
                        } else if (backend.schedule(
                                        () -> deleteTombstone(name, slot, tomb, attempt + 1),
                                        backoffMillis(attempt + 1))
                                == null) {
                            releaseSlotHeldForTombstone(name, slot);
                        }
                    });
        } catch (RuntimeException e) {
            log.warn("[lock={} state=LOST] deleting {} failed: {}", name, tomb, e.toString());
            releaseSlotHeldForTombstone(name, slot);
        }
    }

    /**
     * Whether lost holders' tombstones wait for their scheduled deletion: closing the client must then
     * leave the lock-delay lease to run out instead of revoking it, or the delay would end at once.
     */
    boolean holdsTombstones() {
        return !slotsHeldForTombstones.isEmpty();
    }

    private void releaseSlotHeldForTombstone(String name, int slot) {
        if (slot != NO_SLOT && slotsHeldForTombstones.remove(heldSlot(name, slot))) {
            freeSlot(name, slot);
        }
    }

    private static String heldSlot(String lockName, int slot) {
        return lockName + "#" + slot;
    }

    // ---- release

    @Override
    public CompletionStage<Void> release(QueueEntry entry) {
        forget(entry); // before the delete is sent: its event is then never taken for a forced one
        CompletableFuture<Void> done = new CompletableFuture<>();
        delete(entry, done, 0);
        return done;
    }

    /** The entry is gone: its slot is free again before the engine (and the next acquire) hears so. */
    private void deleted(QueueEntry entry, CompletableFuture<Void> done) {
        if (isExclusive(entry)) {
            freeSlot(entry.lockName(), slotOf(entry));
        }
        done.complete(null);
    }

    /** How many of the next deletes fail without reaching etcd: a fault for tests. */
    final java.util.concurrent.atomic.AtomicInteger failingDeletes = new java.util.concurrent.atomic.AtomicInteger();

    /**
     * Never throws: whatever goes wrong completes {@code done} (it also runs as a timer task). Once
     * {@code done} has failed (the retry budget is spent) it goes on until the key is deleted, its
     * lease is lost, or the client closes.
     */
    private void delete(QueueEntry entry, CompletableFuture<Void> done, int attempt) {
        try {
            deleteOnce(entry, done, attempt);
        } catch (RuntimeException e) {
            done.completeExceptionally(e);
        }
    }

    private void deleteOnce(QueueEntry entry, CompletableFuture<Void> done, int attempt) {
        if (backend.lease(entry.session()) == null || backend.isClosed()) {
            // Its lease is lost (revoked with its keys) or the client closes (revoking it).
            deleted(entry, done);
            return;
        }
        String key = etcdKey(entry);
        List<Op> ops = new ArrayList<>(List.of(Op.delete(bytes(key), DeleteOption.DEFAULT)));
        if (lockDelay && isExclusive(entry)) {
            ops.add(Op.delete(bytes(tombstoneKey(entry.lockName(), key)), DeleteOption.DEFAULT));
        }
        // Only this entry's generation of the key: a slot's key is put again by later acquisitions.
        // If it is gone already, so is what goes with it; a lost holder's lock-delay key stays.
        Cmp own = new Cmp(bytes(key), Cmp.Op.EQUAL, CmpTarget.createRevision(entry.token()));
        CompletableFuture<TxnResponse> sent = failingDeletes.get() > 0 && failingDeletes.getAndDecrement() > 0
                ? CompletableFuture.failedFuture(new LockBackendException(
                        entry.lockName(), EtcdBackend.NAME, "delete failed (injected by a test)", null))
                : txn(List.of(own), ops, List.of());
        sent.whenComplete((r, err) -> {
            try {
                if (err == null) {
                    deleted(entry, done);
                    return;
                }
                if (!done.isDone() && attempt + 1 >= maxAttempts() * 4) {
                    // The key lives as long as the lease, and the lease as long as this client: it
                    // would block the lock for everyone else. The caller hears of the failure; the
                    // delete goes on in the background, at the retry policy's longest sleep.
                    log.warn(
                            "[lock={} state=RELEASING] could not delete {}: {}; trying again every {} ms for as"
                                    + " long as its lease lives",
                            entry.lockName(),
                            key,
                            err.toString(),
                            backoffMillis(attempt + 1));
                    done.completeExceptionally(failure(entry.lockName(), "deleting " + key, err));
                }
                if (backend.schedule(() -> delete(entry, done, attempt + 1), backoffMillis(attempt + 1)) == null) {
                    deleted(entry, done); // the client closes: revoking its lease deletes the key
                }
            } catch (RuntimeException e) {
                done.completeExceptionally(e);
            }
        });
    }

    /** Deletes {@code kv} if it has not changed since it was read. */
    private CompletableFuture<TxnResponse> deleteIf(KeyValue kv) {
        return txn(
                List.of(new Cmp(kv.getKey(), Cmp.Op.EQUAL, CmpTarget.modRevision(kv.getModRevision()))),
                List.of(Op.delete(kv.getKey(), DeleteOption.DEFAULT)),
                List.of());
    }

    // ---- recovery

    @Override
    public CompletionStage<Optional<QueueEntry>> findOwnEntry(String lockName, String acquisitionId) {
        EtcdBackend.EtcdLease lease = backend.currentLease();
        String exclusiveValue = "x " + acquisitionId;
        return backend.bounded(backend.client
                        .getKVClient()
                        .get(
                                bytes(root + lockName + "/"),
                                GetOption.builder().isPrefix(true).build()))
                .thenApply(r -> {
                    for (KeyValue kv : r.getKvs()) {
                        String key = string(kv.getKey());
                        String family = familyIn(root, lockName, key);
                        // An exclusive entry names its acquisition in the value (its key is a slot's).
                        boolean ours = "x".equals(family)
                                ? mode(kv).equals(exclusiveValue)
                                : ("rw".equals(family) || "s".equals(family)) && key.endsWith("/" + acquisitionId);
                        if (ours) {
                            if (lease != null && kv.getLease() == lease.id) {
                                return Optional.of(
                                        entry(lockName, acquisitionId, key, lease.id, kv.getCreateRevision()));
                            }
                            log.debug(
                                    "[lock={} state=QUEUED] not adopting {}: on lease {}, not the current one",
                                    lockName,
                                    key,
                                    Long.toHexString(kv.getLease()));
                        }
                    }
                    return Optional.<QueueEntry>empty();
                });
    }

    // ---- helpers

    private CompletableFuture<TxnResponse> txn(List<Cmp> ifs, List<Op> then, List<Op> otherwise) {
        try {
            return backend.bounded(backend.client
                    .getKVClient()
                    .txn()
                    .If(ifs.toArray(new Cmp[0]))
                    .Then(then.toArray(new Op[0]))
                    .Else(otherwise.toArray(new Op[0]))
                    .commit());
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private long backoffMillis(int attempt) {
        long base = Math.max(1, backend.options.retryPolicy().baseSleep().toMillis());
        long max = Math.max(base, backend.options.retryPolicy().maxSleep().toMillis());
        return Math.min(max, base << Math.min(20, attempt - 1));
    }

    private int maxAttempts() {
        return Math.max(1, backend.options.retryPolicy().maxRetries());
    }

    static Throwable unwrap(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && (t instanceof CompletionException || t instanceof ExecutionException)) {
            t = t.getCause();
        }
        return t;
    }

    static LockBackendException failure(@Nullable String lockName, String what, Throwable error) {
        Throwable cause = unwrap(error);
        if (cause instanceof LockBackendException lbe) {
            return lbe;
        }
        String m = cause instanceof TimeoutException ? "no answer in time" : String.valueOf(cause.getMessage());
        return new LockBackendException(lockName, EtcdBackend.NAME, what + ": " + m, cause);
    }
}
