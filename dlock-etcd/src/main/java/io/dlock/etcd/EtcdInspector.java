package io.dlock.etcd;

import static io.dlock.etcd.EtcdBackend.bytes;
import static io.dlock.etcd.EtcdBackend.string;

import io.dlock.LockBackendException;
import io.dlock.spi.DataLossFence;
import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockKind;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockSnapshot;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.lease.LeaseTimeToLiveResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.LeaseOption;
import io.etcd.jetcd.options.WatchOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The operator view of an etcd backend: reads the entry keys as {@link EtcdLockProtocol} lays them
 * out ({@code <ns>//<name>/<x|rw|s>/<id>}, lock-delay keys under {@code d/}), without changing the
 * protocol. Keys and values of another shape under the namespace are skipped (logged at debug).
 *
 * <p>What etcd shows: the holding client (its lease, in hex), the host and pid of the process that
 * put the entry and when it put it (both written in the entry's value; etcd keeps no time for a
 * revision, so {@code since} is when the entry entered the queue, which for a waiter granted later
 * is before its grant), the fencing token (the create revision), and the lease time left
 * (LeaseTimeToLive). A client counts as connected while its lease was kept alive within the last
 * {@link #KEEP_ALIVE_SLACK_S} seconds (dlock sends a keep-alive every second at most); on a lease
 * TTL of that or less it cannot be told. An entry's key for {@link #forceRelease} is its etcd key
 * and create revision, {@code <etcd key>@<revision>}: a client reuses its keys, so the key alone
 * would name later grants too.
 *
 * <p>A forced release deletes the holder's key (and its lock-delay key: a forced release is a
 * release, not a loss) in a transaction that checks the create revision. The next waiter, which
 * watches that key, is granted with its own, higher, revision. A holder that is still alive is
 * told at once ({@link #forcedReleaseNotice()} is {@code AT_ONCE}): its client's watch on the
 * namespace's deletes, started once one of its grants has been held for about 200 ms, delivers the
 * delete, and its lease turns invalid ({@code onLost}) within about a second; a grant removed
 * sooner is checked when that watch starts. If its connection is down then, it finds its key gone
 * at its next renewal (every third of its lease time).
 *
 * <p>Concurrency: inspections and releases block the caller on jetcd futures; a watch re-reads on
 * its own single thread, never on jetcd's executor (which completes the futures it would wait for).
 */
final class EtcdInspector implements LockInspector {
    /** A lease whose TTL left is more than this below its granted TTL has not been kept alive. */
    static final long KEEP_ALIVE_SLACK_S = 3;

    /** The shortest period of a watch's safety-net read. */
    static final long SAFETY_READ_MS = 10_000;

    private static final GetOption BY_CREATE = GetOption.builder()
            .isPrefix(true)
            .withSortField(GetOption.SortTarget.CREATE)
            .withSortOrder(GetOption.SortOrder.ASCEND)
            .build();

    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(EtcdInspector.class);

    private final EtcdBackend backend;
    /** Where this namespace's lock names begin ({@link EtcdLockProtocol#root}). */
    private final String root;

    EtcdInspector(EtcdBackend backend) {
        this.backend = backend;
        this.root = EtcdLockProtocol.root(backend.uri.namespace());
    }

    /** An entry key read back: its lock name, family and id (the last path segment). */
    private record Parsed(String name, String family, String id) {}

    /** Splits {@code <ns>//<name>/<family>/<id>}; null for anything else (a foreign key). */
    private @Nullable Parsed parse(String key) {
        if (!key.startsWith(root)) {
            return null;
        }
        String[] parts = key.substring(root.length()).split("/", -1);
        if (parts.length != 3 || parts[0].isEmpty() || parts[2].isEmpty()) {
            return null;
        }
        return switch (parts[1]) {
            case "x", "rw", "s", "d" -> new Parsed(parts[0], parts[1], parts[2]);
            default -> null;
        };
    }

    @Override
    public List<LockSnapshot> inspect(String namePrefix) {
        Objects.requireNonNull(namePrefix, "namePrefix");
        // Lock names have no '/', so the name prefix is a key prefix.
        return read(root + namePrefix, name -> name.startsWith(namePrefix));
    }

    /** The snapshots of lock {@code name} alone. */
    List<LockSnapshot> read(String name) {
        return read(root + name + "/", name::equals);
    }

    private List<LockSnapshot> read(String keyPrefix, java.util.function.Predicate<String> names) {
        List<KeyValue> kvs = await(
                        null,
                        "reading " + keyPrefix,
                        backend.client.getKVClient().get(bytes(keyPrefix), BY_CREATE))
                .getKvs();
        // name -> family -> entries by create revision; name -> lock-delay ids
        TreeMap<String, Map<String, List<KeyValue>>> locks = new TreeMap<>();
        Map<String, Set<String>> tombstones = new HashMap<>();
        Set<Long> leases = new HashSet<>();
        for (KeyValue kv : kvs) {
            Parsed p = parse(string(kv.getKey()));
            if (p == null || !names.test(p.name())) {
                continue;
            }
            if (!p.family().equals("d") && !isEntry(p.family(), EtcdLockProtocol.mode(kv))) {
                log.debug("skipping {} = '{}': not an entry dlock wrote", string(kv.getKey()), string(kv.getValue()));
                continue;
            }
            if (p.family().equals("d")) {
                tombstones.computeIfAbsent(p.name(), n -> new HashSet<>()).add(p.id());
            } else {
                locks.computeIfAbsent(p.name(), n -> new LinkedHashMap<>())
                        .computeIfAbsent(p.family(), f -> new ArrayList<>())
                        .add(kv);
                leases.add(kv.getLease());
            }
        }
        Map<Long, LeaseTimeToLiveResponse> ttls = leaseTimes(leases);
        long offset = tokenOffset();
        List<LockSnapshot> out = new ArrayList<>();
        for (Map.Entry<String, Map<String, List<KeyValue>>> lock : locks.entrySet()) {
            for (String family : List.of("x", "rw", "s")) {
                List<KeyValue> entries = new ArrayList<>();
                for (KeyValue kv : lock.getValue().getOrDefault(family, List.of())) {
                    LeaseTimeToLiveResponse ttl = ttls.get(kv.getLease());
                    // Expired (or revoked) but not yet purged: etcd deletes the keys with the lease.
                    if (ttl != null && ttl.getTTL() >= 0) {
                        entries.add(kv);
                    }
                }
                if (!entries.isEmpty()) {
                    out.add(snapshot(
                            lock.getKey(),
                            family,
                            entries,
                            tombstones.getOrDefault(lock.getKey(), Set.of()),
                            ttls,
                            offset));
                }
            }
        }
        return out;
    }

    /**
     * What the namespace's epoch marker adds to create revisions to make tokens (see {@link
     * EtcdLockProtocol}), or {@link EtcdLockProtocol#FENCED} while nothing can be granted: the
     * namespace is fenced after a data loss (logged at WARN with its end), or its marker is missing or
     * not dlock's (the first entry's client is about to fence it). Every entry then shows as waiting.
     */
    private long tokenOffset() {
        TxnResponse r = readEpoch();
        List<KeyValue> fence = r.getGetResponses().get(1).getKvs();
        if (!fence.isEmpty()) {
            log.warn(
                    "namespace {} is fenced after a data loss ({}): nothing is granted until the fence's lease"
                            + " runs out",
                    root,
                    string(fence.get(0).getValue()));
            return EtcdLockProtocol.FENCED;
        }
        List<KeyValue> marker = r.getGetResponses().get(0).getKvs();
        long offset = marker.isEmpty()
                ? EtcdLockProtocol.FENCED
                : EtcdLockProtocol.offsetOf(string(marker.get(0).getValue()));
        return offset < 0 ? EtcdLockProtocol.FENCED : offset;
    }

    @Override
    public List<DataLossFence> fences() {
        TxnResponse r = readEpoch();
        List<KeyValue> fence = r.getGetResponses().get(1).getKvs();
        String ns = backend.uri.namespace();
        if (!fence.isEmpty()) {
            return List.of(EtcdLockProtocol.fenceOf(ns, string(fence.get(0).getValue())));
        }
        List<KeyValue> marker = r.getGetResponses().get(0).getKvs();
        if (!marker.isEmpty() && EtcdLockProtocol.offsetOf(string(marker.get(0).getValue())) >= 0) {
            return List.of();
        }
        return List.of(new DataLossFence(
                "namespace '" + ns + "'",
                Instant.now().plus(backend.options.leaseTime()),
                (marker.isEmpty()
                                ? "no epoch marker " + root + "#epoch (a new namespace, or etcd lost its data)"
                                : "the epoch marker " + root + "#epoch is not dlock's")
                        + ": the next acquire fences the namespace for its lease time ("
                        + backend.options.leaseTime() + " for this client); run 'dlock init' once on a brand-new"
                        + " namespace"));
    }

    @Override
    public String initialize() {
        long keys = await(
                        null,
                        "counting the namespace's keys",
                        backend.client
                                .getKVClient()
                                .get(
                                        bytes(root),
                                        GetOption.builder()
                                                .isPrefix(true)
                                                .withCountOnly(true)
                                                .build()))
                .getCount();
        if (keys > 0) {
            throw new IllegalStateException("namespace '" + backend.uri.namespace() + "' on etcd holds " + keys
                    + " key(s) under " + root + ": it was used before; not marked. Only a brand-new namespace may"
                    + " be, and one whose data was lost must wait out its fence");
        }
        String id = Long.toHexString(
                java.util.concurrent.ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        TxnResponse t = await(
                null,
                "writing the epoch marker",
                backend.client
                        .getKVClient()
                        .txn()
                        .If(new Cmp(bytes(root + "#epoch"), Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
                        .Then(Op.put(bytes(root + "#epoch"), bytes(id + " 0"), io.etcd.jetcd.options.PutOption.DEFAULT))
                        .commit());
        if (!t.isSucceeded()) {
            throw new IllegalStateException("namespace '" + backend.uri.namespace()
                    + "' on etcd: another client wrote its epoch marker meanwhile; not marked");
        }
        return "marked namespace '" + backend.uri.namespace() + "' on etcd as new (" + root + "#epoch)";
    }

    /** The namespace's epoch marker and fence, in one read. */
    private TxnResponse readEpoch() {
        return await(
                null,
                "reading the epoch marker",
                backend.client
                        .getKVClient()
                        .txn()
                        .Then(
                                Op.get(bytes(root + "#epoch"), GetOption.DEFAULT),
                                Op.get(bytes(root + "#fence"), GetOption.DEFAULT))
                        .commit());
    }

    /** Each lease's TTL left, asked for all at once. */
    private Map<Long, LeaseTimeToLiveResponse> leaseTimes(Set<Long> leases) {
        Map<Long, CompletableFuture<LeaseTimeToLiveResponse>> asked = new HashMap<>();
        for (long id : leases) {
            if (id != 0) {
                asked.put(id, backend.client.getLeaseClient().timeToLive(id, LeaseOption.DEFAULT));
            }
        }
        Map<Long, LeaseTimeToLiveResponse> out = new HashMap<>();
        for (Map.Entry<Long, CompletableFuture<LeaseTimeToLiveResponse>> e : asked.entrySet()) {
            out.put(e.getKey(), await(null, "reading lease " + Long.toHexString(e.getKey()), e.getValue()));
        }
        return out;
    }

    /** Whether {@code mode} is an entry's that dlock writes in {@code family}. */
    private static boolean isEntry(String family, String mode) {
        return family.equals("x") ? mode.startsWith("x ") : EtcdLockProtocol.isEntryMode(family, mode);
    }

    /** Decides, as {@link EtcdLockProtocol} does, which entries of one family hold. */
    private static LockSnapshot snapshot(
            String name,
            String family,
            List<KeyValue> entries,
            Set<String> tombstones,
            Map<Long, LeaseTimeToLiveResponse> ttls,
            long offset) {
        int max = 0;
        boolean downgradeRead = false;
        for (KeyValue kv : entries) {
            String m = EtcdLockProtocol.mode(kv);
            downgradeRead |= m.equals("rd");
            int[] s = EtcdLockProtocol.semaphore(m);
            if (family.equals("s") && s != null && max == 0) {
                max = s[1];
            }
        }
        List<EntrySnapshot> holders = new ArrayList<>();
        List<EntrySnapshot> waiters = new ArrayList<>();
        boolean writerAhead = false;
        int permitsAhead = 0;
        for (int i = 0; i < entries.size(); i++) {
            KeyValue kv = entries.get(i);
            String key = string(kv.getKey());
            String m = EtcdLockProtocol.mode(kv);
            LockMode mode = modeOf(m);
            int[] semaphore = EtcdLockProtocol.semaphore(m);
            int permits = mode == LockMode.SEMAPHORE && semaphore != null ? semaphore[0] : 1;
            boolean holds = offset != EtcdLockProtocol.FENCED
                    && switch (mode) {
                            // With lock-delay the first entry is granted once its own lock-delay key
                            // exists, and not while another's is left.
                        case EXCLUSIVE -> i == 0
                                && (tombstones.isEmpty()
                                        || tombstones.contains(key.substring(key.lastIndexOf('/') + 1)));
                        case WRITE -> i == 0 && !downgradeRead;
                        case READ -> m.equals("rd") || !writerAhead;
                        case SEMAPHORE -> permitsAhead + permits <= (max == 0 ? Integer.MAX_VALUE : max);
                    };
            writerAhead |= mode == LockMode.WRITE;
            permitsAhead += permits;
            (holds ? holders : waiters).add(entry(kv, key, mode, permits, holds, ttls.get(kv.getLease()), offset));
        }
        LockKind kind =
                switch (family) {
                    case "x" -> LockKind.EXCLUSIVE;
                    case "rw" -> LockKind.READ_WRITE;
                    default -> LockKind.SEMAPHORE;
                };
        return new LockSnapshot(name, kind, kind == LockKind.SEMAPHORE ? max : 1, holders, waiters);
    }

    private static LockMode modeOf(String mode) {
        if (mode.startsWith("x")) {
            return LockMode.EXCLUSIVE;
        }
        if (mode.startsWith("s ")) {
            return LockMode.SEMAPHORE;
        }
        return mode.equals("w") ? LockMode.WRITE : LockMode.READ;
    }

    private static EntrySnapshot entry(
            KeyValue kv,
            String key,
            LockMode mode,
            int permits,
            boolean holds,
            @Nullable LeaseTimeToLiveResponse ttl,
            long offset) {
        // The value's origin: "<mode>|<pid>@<host>|<put time, ms base 36>" (older entries: none).
        String[] origin = string(kv.getValue()).split("\\|", -1);
        String host = null;
        long pid = -1;
        Instant since = null;
        if (origin.length == 3) {
            int at = origin[1].indexOf('@');
            try {
                pid = Long.parseLong(origin[1].substring(0, at));
                host = origin[1].substring(at + 1);
                since = Instant.ofEpochMilli(Long.parseLong(origin[2], Character.MAX_RADIX));
            } catch (RuntimeException e) {
                // Not written by dlock: show what the key itself says.
            }
        }
        Boolean connected = null;
        Duration left = null;
        if (ttl != null) {
            left = Duration.ofSeconds(ttl.getTTL());
            if (ttl.getGrantedTTL() > KEEP_ALIVE_SLACK_S) {
                connected = ttl.getTTL() >= ttl.getGrantedTTL() - KEEP_ALIVE_SLACK_S;
            }
        }
        return new EntrySnapshot(
                key + "@" + kv.getCreateRevision(),
                mode,
                permits,
                Long.toHexString(kv.getLease()),
                host,
                pid,
                connected,
                holds ? kv.getCreateRevision() + offset : 0,
                since,
                left);
    }

    /**
     * {@link ForcedReleaseNotice#AT_ONCE}: the holder's client sees the delete through its shared
     * watch (see the class comment). Blocking: never. Thread-safety: safe from any thread. On
     * failure: cannot fail.
     */
    @Override
    public ForcedReleaseNotice forcedReleaseNotice() {
        return ForcedReleaseNotice.AT_ONCE;
    }

    @Override
    public List<String> forceRelease(String name, Collection<String> keys) {
        if (name.isEmpty()) {
            throw new IllegalArgumentException("a lock name is required");
        }
        Map<String, Long> revisions = new LinkedHashMap<>();
        for (String key : keys) {
            int at = key.lastIndexOf('@');
            Parsed p = at < 0 ? null : parse(key.substring(0, at));
            long revision = -1;
            if (p != null && !p.family().equals("d") && p.name().equals(name)) {
                try {
                    revision = Long.parseLong(key.substring(at + 1));
                } catch (NumberFormatException e) {
                    revision = -1;
                }
            }
            if (revision <= 0) {
                throw new IllegalArgumentException("'" + key + "' is no entry of lock '" + name
                        + "' (an entry key is '<etcd key>@<create revision>', as 'dlock inspect' shows it)");
            }
            revisions.put(key, revision);
        }
        Set<String> granted = new HashSet<>();
        for (LockSnapshot l : read(name)) {
            l.holders().forEach(e -> granted.add(e.key()));
        }
        List<String> removed = new ArrayList<>();
        for (Map.Entry<String, Long> e : revisions.entrySet()) {
            if (!granted.contains(e.getKey())) {
                continue; // gone, or a waiter: only grants are released
            }
            String key = e.getKey().substring(0, e.getKey().lastIndexOf('@'));
            List<Op> deletes = new ArrayList<>(List.of(Op.delete(bytes(key), DeleteOption.DEFAULT)));
            if (EtcdLockProtocol.familyMode(key) == LockMode.EXCLUSIVE) {
                // As a release does: a forced release is no loss, so no lock-delay follows it.
                deletes.add(Op.delete(
                        bytes(root + name + "/d/" + key.substring(key.lastIndexOf('/') + 1)), DeleteOption.DEFAULT));
            }
            TxnResponse r = await(
                    name,
                    "deleting " + key,
                    backend.client
                            .getKVClient()
                            .txn()
                            .If(new Cmp(bytes(key), Cmp.Op.EQUAL, CmpTarget.createRevision(e.getValue())))
                            .Then(deletes.toArray(new Op[0]))
                            .commit());
            if (r.isSucceeded()) {
                removed.add(e.getKey());
            }
        }
        return removed;
    }

    @Override
    public LockInspector.Watch watch(
            String name, Duration pollInterval, Consumer<List<LockSnapshot>> listener, Consumer<Throwable> onError) {
        if (name.isEmpty()) {
            throw new IllegalArgumentException("a lock name is required");
        }
        if (pollInterval.isNegative() || pollInterval.isZero()) {
            throw new IllegalArgumentException("pollInterval must be positive: " + pollInterval);
        }
        PrefixWatch w = new PrefixWatch(name, pollInterval, listener, onError);
        w.start();
        return w;
    }

    /**
     * Re-reads the lock after each change under its prefix (one etcd watch, which jetcd resumes
     * after a reconnect), and every poll interval but at least {@link #SAFETY_READ_MS} as a safety
     * net for a watch that ended (a compaction past its revision).
     */
    private final class PrefixWatch implements LockInspector.Watch {
        private final String name;
        private final Duration pollInterval;
        private final Consumer<List<LockSnapshot>> listener;
        private final Consumer<Throwable> onError;
        private final ScheduledExecutorService thread;
        private final AtomicBoolean closed = new AtomicBoolean();
        private volatile io.etcd.jetcd.Watch.@Nullable Watcher watcher;
        /** On the namespace's fence: its end grants the first entry without a change under the lock. */
        private volatile io.etcd.jetcd.Watch.@Nullable Watcher fenceWatcher;
        // Only the watch's thread touches this.
        private @Nullable List<String> last;

        PrefixWatch(
                String name,
                Duration pollInterval,
                Consumer<List<LockSnapshot>> listener,
                Consumer<Throwable> onError) {
            this.name = name;
            this.pollInterval = pollInterval;
            this.listener = listener;
            this.onError = onError;
            this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "dlock-etcd-inspect-watch");
                t.setDaemon(true);
                return t;
            });
        }

        void start() {
            // The watch exists before the first read: no change after that read goes unseen.
            watcher = backend.client
                    .getWatchClient()
                    .watch(
                            bytes(root + name + "/"),
                            WatchOption.builder().isPrefix(true).build(),
                            io.etcd.jetcd.Watch.listener(r -> refresh(), e -> {
                                if (!closed.get()) {
                                    onError.accept(e);
                                    refresh();
                                }
                            }));
            fenceWatcher = backend.client
                    .getWatchClient()
                    .watch(
                            bytes(root + "#fence"),
                            WatchOption.DEFAULT,
                            io.etcd.jetcd.Watch.listener(r -> refresh(), e -> {
                                if (!closed.get()) {
                                    refresh();
                                }
                            }));
            // etcd notifies: the poll interval is for servers that cannot, so it only bounds how
            // long a watch that ended unseen goes without a read.
            long ms = Math.max(SAFETY_READ_MS, pollInterval.toMillis());
            thread.scheduleWithFixedDelay(this::read, 0, ms, TimeUnit.MILLISECONDS);
        }

        void refresh() {
            try {
                thread.execute(this::read);
            } catch (RejectedExecutionException e) {
                // closed
            }
        }

        private void read() {
            if (closed.get()) {
                return;
            }
            try {
                List<LockSnapshot> now = EtcdInspector.this.read(name);
                List<String> signature = new ArrayList<>();
                for (LockSnapshot l : now) {
                    l.holders().forEach(e -> signature.add("H " + e.key()));
                    l.waiters().forEach(e -> signature.add("W " + e.key()));
                }
                if (!signature.equals(last) && !closed.get()) {
                    last = signature;
                    listener.accept(now);
                }
            } catch (RuntimeException e) {
                onError.accept(e);
            }
        }

        @Override
        public void close() {
            if (closed.compareAndSet(false, true)) {
                io.etcd.jetcd.Watch.Watcher w = watcher;
                if (w != null) {
                    w.close();
                }
                io.etcd.jetcd.Watch.Watcher f = fenceWatcher;
                if (f != null) {
                    f.close();
                }
                thread.shutdownNow();
            }
        }
    }

    private <T> T await(@Nullable String lockName, String what, CompletableFuture<T> request) {
        try {
            return request.get(backend.requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockBackendException(lockName, EtcdBackend.NAME, "interrupted while " + what, e);
        } catch (ExecutionException e) {
            throw EtcdLockProtocol.failure(lockName, what, e.getCause() == null ? e : e.getCause());
        } catch (TimeoutException e) {
            request.cancel(false);
            throw EtcdLockProtocol.failure(lockName, what, e);
        }
    }
}
