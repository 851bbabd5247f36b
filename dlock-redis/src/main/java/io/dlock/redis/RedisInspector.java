package io.dlock.redis;

import io.dlock.LockBackendException;
import io.dlock.spi.DataLossFence;
import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockKind;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockSnapshot;
import io.lettuce.core.KeyScanCursor;
import io.lettuce.core.ScanArgs;
import io.lettuce.core.ScanCursor;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.cluster.SlotHash;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The operator view of a Redis backend: reads the queues' keys as {@link RedisScripts} lays them
 * out ({@code P:{name}:family} with {@code :s}, {@code :q}, {@code :d}, {@code :h}), without
 * changing the protocol.
 *
 * <p>What Redis can show: the owner client id of each entry (from its record), whether that client
 * is still connected (it subscribes to its wake-up channel while it is: {@code PUBSUB NUMSUB};
 * standalone and Sentinel only), the fencing token, when the grant was made (the token is the
 * server clock in microseconds at the grant, unless the clock went back), and the lease left. Host
 * and pid come from the client's connection name ({@code dlock:<host>:<pid>:<client id>}, set in the
 * handshake, read with {@code CLIENT LIST}; standalone and Sentinel only): they are shown while
 * the client is connected, not for a holder whose process died (whose grant then ends with its
 * lease), nor where the user's ACL denies {@code CLIENT LIST}.
 *
 * <p>A forced release tells a removed holder at once: the script publishes the removal on the
 * holder client's wake-up channel, and that client turns the lease lost ({@code onLost}, within
 * milliseconds). A holder whose subscription is down at that moment misses the message and finds
 * the grant gone when it reconnects (it checks every grant then) or at its next renewal.
 *
 * <p>Concurrency: stateless but for the watches, each of which polls on the backend's timer thread,
 * one read at a time.
 */
final class RedisInspector implements LockInspector {
    private static final int MAX_SCAN_ROUNDS = 100_000;

    /** Reads one queue: the server time, a semaphore's total, and each entry with its deadline. */
    static final RedisBackend.Script READ = RedisBackend.Script.of(
            """
            local t = redis.call('TIME')
            local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            local out = {tostring(nowMs)}
            local sv = redis.call('GET', KEYS[4])
            if sv then
              local sid, rec = string.match(sv, '^(%S+) (.+)$')
              table.insert(out, '')
              table.insert(out, sid)
              table.insert(out, rec)
              table.insert(out, tostring(nowMs + math.max(0, redis.call('PTTL', KEYS[4]))))
              return out
            end
            table.insert(out, redis.call('HGET', KEYS[3], '#max') or '')
            for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
              table.insert(out, id)
              table.insert(out, redis.call('HGET', KEYS[3], id) or '')
              table.insert(out, redis.call('ZSCORE', KEYS[2], id) or '0')
            end
            return out
            """);

    /**
     * Reads one epoch marker: the server time (ms), the marker ('' if missing) and the server's uptime
     * in seconds (-1 where the ACL denies INFO). KEYS: 1 the marker.
     */
    static final RedisBackend.Script READ_EPOCH = RedisBackend.Script.of(
            """
            local t = redis.call('TIME')
            local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            local info = redis.pcall('INFO', 'server')
            local up = type(info) == 'string' and string.match(info, 'uptime_in_seconds:(%d+)') or '-1'
            return {tostring(nowMs), redis.call('GET', KEYS[1]) or '', up}
            """);

    /**
     * Removes the granted entries named in ARGV[3..] (only while still granted), tells each removed
     * entry's owner client, then wakes the owner of every waiter: a hint only, each owner's acquire
     * script decides, so waking more than the one that may proceed costs a round trip each, never
     * safety. KEYS: q, d, h, s. ARGV: 1 channel prefix, 2 entry-key prefix (the base key), 3.. entry
     * ids. Returns the removed ids. Deleting the hash with the last entry drops its {@code #fence}
     * counter, as the release script does: the epoch marker's high-water keeps the next token higher.
     *
     * <p>The owner is told on its wake-up channel with {@value RedisBackend#FORCED} followed by the
     * entry key ({@code base#id}): a wake-up is the entry key alone, which starts with the key
     * prefix (no spaces), so the two never look alike. Its client turns that lease lost at once.
     */
    static final RedisBackend.Script FORCE_RELEASE = RedisBackend.Script.of(
            """
            local removed = {}
            local sv = redis.call('GET', KEYS[4])
            if sv then
              local sid, so = string.match(sv, '^(%S+) %a %d+ (%S+) ')
              for i = 3, #ARGV do
                if ARGV[i] == sid then
                  redis.call('DEL', KEYS[4])
                  table.insert(removed, sid)
                  redis.pcall('PUBLISH', ARGV[1] .. so, 'forced ' .. ARGV[2] .. '#' .. sid)
                  break
                end
              end
              return removed
            end
            for i = 3, #ARGV do
              local v = redis.call('HGET', KEYS[3], ARGV[i])
              if v and tonumber(string.match(v, ' (%d+)$')) > 0 then
                redis.pcall('PUBLISH', ARGV[1] .. string.match(v, '^%a %d+ (%S+) '), 'forced ' .. ARGV[2] .. '#' .. ARGV[i])
                redis.call('HDEL', KEYS[3], ARGV[i])
                redis.call('ZREM', KEYS[1], ARGV[i])
                redis.call('ZREM', KEYS[2], ARGV[i])
                table.insert(removed, ARGV[i])
              end
            end
            if #removed > 0 then
              for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
                local v = redis.call('HGET', KEYS[3], id)
                if v then
                  local o, tok = string.match(v, '^%a %d+ (%S+) (%d+)$')
                  if o and tonumber(tok) == 0 then redis.pcall('PUBLISH', ARGV[1] .. o, ARGV[2] .. '#' .. id) end
                end
              end
              if redis.call('ZCARD', KEYS[1]) == 0 then redis.call('DEL', KEYS[1], KEYS[2], KEYS[3]) end
            end
            return removed
            """);

    private static final Map<String, LockKind> FAMILIES =
            Map.of("x", LockKind.EXCLUSIVE, "rw", LockKind.READ_WRITE, "s", LockKind.SEMAPHORE);

    private static LockKind kind(String family) {
        return Objects.requireNonNull(FAMILIES.get(family), family);
    }

    private final RedisBackend backend;
    private final String keyPrefix;
    private final Duration timeout;

    RedisInspector(RedisBackend backend) {
        this.backend = backend;
        this.keyPrefix = backend.uri.keyPrefix();
        this.timeout = backend.options.connectTimeout().multipliedBy(3);
    }

    @Override
    public ForcedReleaseNotice forcedReleaseNotice() {
        return ForcedReleaseNotice.AT_ONCE;
    }

    @Override
    public List<LockSnapshot> inspect(String namePrefix) {
        Objects.requireNonNull(namePrefix, "namePrefix");
        // name -> family -> base, sorted by name
        TreeMap<String, TreeMap<String, String>> bases = new TreeMap<>();
        ScanArgs args = ScanArgs.Builder.matches(keyPrefix + ":{" + glob(namePrefix) + "*")
                .limit(1000);
        ScanCursor cursor = ScanCursor.INITIAL;
        for (int round = 0; round < MAX_SCAN_ROUNDS; round++) {
            KeyScanCursor<String> page =
                    await(backend.commands().scan(cursor, args).toCompletableFuture(), null);
            for (String key : page.getKeys()) {
                parseKey(key, bases);
            }
            if (page.isFinished()) {
                break;
            }
            cursor = page;
        }
        List<LockSnapshot> out = new ArrayList<>();
        for (var byName : bases.entrySet()) {
            for (var byFamily : byName.getValue().entrySet()) {
                LockSnapshot s = read(byName.getKey(), kind(byFamily.getKey()), byFamily.getValue());
                if (s != null) {
                    out.add(s);
                }
            }
        }
        return withLiveness(out);
    }

    /** Adds {@code P:{name}:family:suffix} to {@code bases}; other keys (epoch markers) are skipped. */
    private void parseKey(String key, Map<String, TreeMap<String, String>> bases) {
        String head = keyPrefix + ":{";
        int close = key.lastIndexOf("}:");
        if (!key.startsWith(head) || close < head.length()) {
            return;
        }
        String[] rest = key.substring(close + 2).split(":", -1);
        if (rest.length != 2
                || !FAMILIES.containsKey(rest[0])
                || !Set.of("q", "d", "h", "s").contains(rest[1])) {
            return;
        }
        String name = key.substring(head.length(), close);
        bases.computeIfAbsent(name, n -> new TreeMap<>()).put(rest[0], key.substring(0, key.length() - 2));
    }

    private @Nullable LockSnapshot read(String name, LockKind kind, String base) {
        List<Object> raw = await(backend.eval(READ, ScriptOutputType.MULTI, RedisLockProtocol.keys(base)), name);
        long nowMs = Long.parseLong((String) raw.get(0));
        String max = (String) raw.get(1);
        List<EntrySnapshot> holders = new ArrayList<>();
        List<EntrySnapshot> waiters = new ArrayList<>();
        for (int i = 2; i + 2 < raw.size(); i += 3) {
            String id = (String) raw.get(i);
            String[] rec = ((String) raw.get(i + 1)).split(" ");
            long deadlineMs = (long) Double.parseDouble((String) raw.get(i + 2));
            if (rec.length != 4 || deadlineMs <= nowMs) {
                continue; // expired, not yet purged; or a record this version does not know
            }
            LockMode mode =
                    switch (rec[0]) {
                        case "R" -> LockMode.READ;
                        case "W" -> LockMode.WRITE;
                        case "S" -> LockMode.SEMAPHORE;
                        default -> LockMode.EXCLUSIVE;
                    };
            long token = Long.parseLong(rec[3]);
            EntrySnapshot e = new EntrySnapshot(
                    base + "#" + id,
                    mode,
                    Integer.parseInt(rec[1]),
                    rec[2],
                    null,
                    -1,
                    null,
                    token,
                    token > 0 ? grantedAt(token, nowMs) : null,
                    Duration.ofMillis(deadlineMs - nowMs));
            (token > 0 ? holders : waiters).add(e);
        }
        if (holders.isEmpty() && waiters.isEmpty()) {
            return null;
        }
        int maxPermits = kind == LockKind.SEMAPHORE ? (max.isEmpty() ? 0 : Integer.parseInt(max)) : 1;
        return new LockSnapshot(name, kind, maxPermits, holders, waiters);
    }

    /** The token is the server clock in µs at the grant unless that clock went back; else unknown. */
    private static @Nullable Instant grantedAt(long token, long nowMs) {
        long ms = token / 1000;
        return ms <= nowMs && ms > nowMs - Duration.ofDays(3650).toMillis() ? Instant.ofEpochMilli(ms) : null;
    }

    /** Marks each entry's client connected or not, by whether it listens on its wake-up channel. */
    private List<LockSnapshot> withLiveness(List<LockSnapshot> locks) {
        if (backend.uri.mode() == RedisUri.Mode.CLUSTER || locks.isEmpty()) {
            return locks; // a channel's subscribers are counted per node there
        }
        Set<String> channels = new LinkedHashSet<>();
        for (LockSnapshot l : locks) {
            for (EntrySnapshot e : concat(l)) {
                channels.add(backend.channelPrefix + e.clientId());
            }
        }
        Map<String, Long> subscribers = await(
                backend.commands().pubsubNumsub(channels.toArray(String[]::new)).toCompletableFuture(), null);
        Map<String, String[]> names = clientNames();
        List<LockSnapshot> out = new ArrayList<>();
        for (LockSnapshot l : locks) {
            out.add(new LockSnapshot(
                    l.name(),
                    l.kind(),
                    l.maxPermits(),
                    l.holders().stream().map(e -> alive(e, subscribers, names)).toList(),
                    l.waiters().stream().map(e -> alive(e, subscribers, names)).toList()));
        }
        return out;
    }

    /**
     * Host and pid of each connected dlock client, by client id, from the connections' names ({@link
     * RedisBackend#clientName}) in {@code CLIENT LIST}; empty where the user may not run it.
     */
    private Map<String, String[]> clientNames() {
        String list;
        try {
            list = await(backend.commands().clientList().toCompletableFuture(), null);
        } catch (LockBackendException e) {
            return Map.of(); // an ACL without CLIENT LIST: host and pid stay unknown
        }
        Map<String, String[]> out = new HashMap<>();
        for (String line : list.split("\n")) {
            int at = line.indexOf(" name=dlock:");
            if (at < 0) {
                continue;
            }
            int end = line.indexOf(' ', at + 1);
            String[] parts = line.substring(at + " name=dlock:".length(), end < 0 ? line.length() : end)
                    .split(":", 3);
            if (parts.length == 3) {
                out.put(parts[2], new String[] {parts[0], parts[1]});
            }
        }
        return out;
    }

    private EntrySnapshot alive(EntrySnapshot e, Map<String, Long> subscribers, Map<String, String[]> names) {
        Long n = subscribers.get(backend.channelPrefix + e.clientId());
        String[] hostPid = e.clientId() == null ? null : names.get(e.clientId());
        long pid = e.pid();
        if (hostPid != null) {
            try {
                pid = Long.parseLong(hostPid[1]);
            } catch (NumberFormatException ignored) {
                // not one of ours after all
            }
        }
        return new EntrySnapshot(
                e.key(),
                e.mode(),
                e.permits(),
                e.clientId(),
                hostPid != null ? hostPid[0] : e.host(),
                pid,
                n == null ? null : n > 0,
                e.backendToken(),
                e.since(),
                e.leaseLeft());
    }

    private static List<EntrySnapshot> concat(LockSnapshot l) {
        List<EntrySnapshot> all = new ArrayList<>(l.holders());
        all.addAll(l.waiters());
        return all;
    }

    /** The snapshots of {@code name}, one per family in use, read directly by key. */
    private List<LockSnapshot> readName(String name) {
        List<LockSnapshot> out = new ArrayList<>();
        for (String family : List.of("x", "rw", "s")) {
            LockSnapshot s = read(name, kind(family), keyPrefix + ":{" + name + "}:" + family);
            if (s != null) {
                out.add(s);
            }
        }
        return withLiveness(out);
    }

    @Override
    public List<DataLossFence> fences() {
        if (backend.uri.mode() != RedisUri.Mode.CLUSTER) {
            String marker = RedisLockProtocol.serverEpochKey(keyPrefix);
            DataLossFence f = fence(marker, "key prefix '" + keyPrefix + "'");
            return f == null ? List.of() : List.of(f);
        }
        // A Cluster has a marker per slot; a slot never used has none, so only markers found count.
        List<DataLossFence> out = new ArrayList<>();
        for (String marker : scan(glob(keyPrefix) + ":{*}:epoch")) {
            int slot = SlotHash.getSlot(marker);
            DataLossFence f = fence(marker, "key prefix '" + keyPrefix + "', slot " + slot);
            if (f != null) {
                out.add(f);
            }
        }
        return out;
    }

    /**
     * The fence one marker stands for: running ('until start'), or about to start (missing: the next
     * acquire starts one, as the acquire script would, with this client's lease); null if the data is
     * continuous ('=' high-water).
     */
    private @Nullable DataLossFence fence(String marker, String scope) {
        List<Object> raw = await(backend.eval(READ_EPOCH, ScriptOutputType.MULTI, new String[] {marker}), null);
        long nowMs = Long.parseLong((String) raw.get(0));
        String v = (String) raw.get(1);
        long up = Long.parseLong((String) raw.get(2));
        if (v.startsWith("=")) {
            return null;
        }
        String[] parts = v.split(" ");
        if (parts.length == 2) {
            long untilMs = (long) Double.parseDouble(parts[0]);
            return untilMs <= nowMs
                    ? null // over: the next acquire marks the data continuous
                    : new DataLossFence(scope, Instant.ofEpochMilli(untilMs), RedisLockProtocol.FENCE_REASON);
        }
        long leaseMs = backend.options.leaseTime().toMillis();
        long startMs = up >= 1 && (up - 1) * 1000 < leaseMs ? nowMs - (up - 1) * 1000 : nowMs;
        return new DataLossFence(
                scope,
                Instant.ofEpochMilli(startMs + leaseMs),
                "no epoch marker " + marker + " (a new server, or one that lost its data): the next acquire"
                        + " starts a fence of one lease (" + backend.options.leaseTime() + " for this client),"
                        + " counted from the server's start where that was less than a lease ago; run 'dlock"
                        + " init' once on a brand-new deployment");
    }

    @Override
    public String initialize() {
        List<String> used = scan(glob(keyPrefix) + ":*");
        if (!used.isEmpty()) {
            throw new IllegalStateException("key prefix '" + keyPrefix + "' on redis was used before (" + used.size()
                    + " key(s), for example " + used.get(0) + "): not marked; only a brand-new deployment may be,"
                    + " and a server that lost its data must wait out its fence");
        }
        List<String> markers = new ArrayList<>();
        if (backend.uri.mode() != RedisUri.Mode.CLUSTER) {
            markers.add(RedisLockProtocol.serverEpochKey(keyPrefix));
        } else {
            for (int slot = 0; slot < SlotHash.SLOT_COUNT; slot++) {
                markers.add(RedisLockProtocol.epochKey(keyPrefix, slot));
            }
        }
        SetArgs nx = SetArgs.Builder.nx();
        List<CompletableFuture<String>> sets = new ArrayList<>();
        for (String m : markers) {
            sets.add(backend.commands().set(m, "=0", nx).toCompletableFuture());
        }
        int marked = 0;
        for (CompletableFuture<String> f : sets) {
            if ("OK".equals(await(f, null))) {
                marked++;
            }
        }
        if (marked < markers.size()) {
            throw new IllegalStateException("key prefix '" + keyPrefix + "' on redis: " + (markers.size() - marked)
                    + " epoch marker(s) appeared while marking (another client started using it); " + marked
                    + " marked");
        }
        return markers.size() == 1
                ? "marked key prefix '" + keyPrefix + "' on redis as a new deployment (" + markers.get(0) + ")"
                : "marked key prefix '" + keyPrefix + "' on the redis cluster as a new deployment (" + marked
                        + " slots)";
    }

    /** Every key matching {@code pattern} (already a glob), across the whole Cluster where there is one. */
    private List<String> scan(String pattern) {
        List<String> keys = new ArrayList<>();
        ScanArgs args = ScanArgs.Builder.matches(pattern).limit(1000);
        ScanCursor cursor = ScanCursor.INITIAL;
        for (int round = 0; round < MAX_SCAN_ROUNDS; round++) {
            KeyScanCursor<String> page =
                    await(backend.commands().scan(cursor, args).toCompletableFuture(), null);
            keys.addAll(page.getKeys());
            if (page.isFinished()) {
                break;
            }
            cursor = page;
        }
        return keys;
    }

    @Override
    public List<String> forceRelease(String name, Collection<String> keys) {
        if (name.isEmpty()) {
            throw new IllegalArgumentException("a lock name is required");
        }
        Map<String, List<String>> idsByBase = new HashMap<>();
        for (String key : keys) {
            int hash = key.lastIndexOf('#');
            String base = hash < 0 ? "" : key.substring(0, hash);
            if (!base.startsWith(keyPrefix + ":{" + name + "}:")
                    || !FAMILIES.containsKey(base.substring(base.lastIndexOf(':') + 1))) {
                throw new IllegalArgumentException("'" + key + "' is no entry of lock '" + name + "'");
            }
            idsByBase.computeIfAbsent(base, b -> new ArrayList<>()).add(key.substring(hash + 1));
        }
        List<String> removed = new ArrayList<>();
        for (var e : idsByBase.entrySet()) {
            List<String> args = new ArrayList<>(List.of(backend.channelPrefix, e.getKey()));
            args.addAll(e.getValue());
            List<Object> ids = await(
                    backend.eval(
                            FORCE_RELEASE,
                            ScriptOutputType.MULTI,
                            RedisLockProtocol.keys(e.getKey()),
                            args.toArray(String[]::new)),
                    name);
            for (Object id : ids) {
                removed.add(e.getKey() + "#" + id);
            }
        }
        return removed;
    }

    @Override
    public Watch watch(
            String name, Duration pollInterval, Consumer<List<LockSnapshot>> listener, Consumer<Throwable> onError) {
        if (name.isEmpty()) {
            throw new IllegalArgumentException("a lock name is required");
        }
        if (pollInterval.isNegative() || pollInterval.isZero()) {
            throw new IllegalArgumentException("pollInterval must be positive: " + pollInterval);
        }
        Poller p = new Poller(name, pollInterval.toMillis(), listener, onError);
        p.schedule(0);
        return p;
    }

    /** Reads the lock every interval on the backend's timer and reports it when it changed. */
    private final class Poller implements Watch {
        private final String name;
        private final long intervalMs;
        private final Consumer<List<LockSnapshot>> listener;
        private final Consumer<Throwable> onError;
        private final AtomicBoolean closed = new AtomicBoolean();
        // Only the timer thread touches these.
        private @Nullable List<String> last;
        private volatile @Nullable ScheduledFuture<?> next;

        Poller(String name, long intervalMs, Consumer<List<LockSnapshot>> listener, Consumer<Throwable> onError) {
            this.name = name;
            this.intervalMs = intervalMs;
            this.listener = listener;
            this.onError = onError;
        }

        void schedule(long delayMs) {
            if (!closed.get()) {
                next = backend.schedule(this::poll, delayMs);
            }
        }

        private void poll() {
            if (closed.get()) {
                return;
            }
            try {
                List<LockSnapshot> now = readName(name);
                List<String> signature = signature(now);
                if (!signature.equals(last)) {
                    last = signature;
                    listener.accept(now);
                }
            } catch (RuntimeException e) {
                onError.accept(e);
            }
            schedule(intervalMs);
        }

        @Override
        public void close() {
            closed.set(true);
            ScheduledFuture<?> f = next;
            if (f != null) {
                f.cancel(false);
            }
        }
    }

    /** What a change is: entries, their grants and liveness; not the lease time ticking down. */
    static List<String> signature(List<LockSnapshot> locks) {
        List<String> out = new ArrayList<>();
        for (LockSnapshot l : locks) {
            for (EntrySnapshot e : l.holders()) {
                out.add("H " + e.key() + " " + e.backendToken() + " " + e.connected());
            }
            for (EntrySnapshot e : l.waiters()) {
                out.add("W " + e.key() + " " + e.connected());
            }
        }
        return out;
    }

    private <T> T await(CompletableFuture<T> f, @Nullable String lockName) {
        try {
            return f.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockBackendException(lockName, RedisBackend.NAME, "interrupted while reading the server", e);
        } catch (ExecutionException e) {
            Throwable cause = RedisLockProtocol.unwrap(e);
            throw new LockBackendException(lockName, RedisBackend.NAME, "inspection failed: " + cause, cause);
        } catch (TimeoutException e) {
            throw new LockBackendException(
                    lockName, RedisBackend.NAME, "the server did not answer within " + timeout, e);
        }
    }

    /** Escapes the glob characters of a SCAN pattern. */
    static String glob(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) {
            if ("*?[]\\".indexOf(c) >= 0) {
                b.append('\\');
            }
            b.append(c);
        }
        return b.toString();
    }
}
