package io.dlock.memcached;

import io.dlock.LockBackendException;
import io.dlock.memcached.MemcachedBackend.Server;
import io.dlock.memcached.MetaConnection.Command;
import io.dlock.memcached.MetaConnection.Reply;
import io.dlock.spi.DataLossFence;
import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockKind;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockSnapshot;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;

/**
 * The operator view of a memcached backend, read from the keys {@link MemcachedLockProtocol} writes.
 *
 * <p>What memcached can show: memcached cannot list keys by prefix, so an inspection walks each
 * server's hash table with {@code lru_crawler metadump hash} (memcached 1.6; two crawls per server
 * and inspection, on a connection of its own, proportional to the whole cache, not to dlock's keys)
 * and reads the lock and waiter keys it finds under the namespace. The crawler is no snapshot: a key
 * rewritten while it runs may be missed, so each inspection takes the union of two walks, and a key
 * missed by both is seen at the next inspection. Per holder it shows the
 * client id and, from the client's info key ({@code dlock:c:<client id>}, written once per
 * connection), its host and pid; the lease time left (the key's TTL, whole seconds). The fencing
 * token and the grant time: a holder still holding {@link MemcachedLockProtocol#RECORD_DELAY_NANOS}
 * after its grant writes them to a grant record ({@code <prefix>:g:<name>}, one command, not waited
 * for, expiring with the lease; a shorter grant writes none, which keeps it off the uncontended
 * cycle), and its renewals write them into the lock key itself; a holder seen within that delay, or
 * one that died within it, shows token 0 and no grant time. Waiters
 * are the waiter keys, shown in the order they started waiting; memcached keeps no queue, so the
 * next grant goes to whichever waiter polls first, not necessarily the first shown. Whether a
 * holder's client is still connected cannot be told (a crashed holder's key lives until its TTL).
 *
 * <p>A forced release deletes the lock key with a CAS on the value read, and only if it still holds
 * the inspected acquisition, so it never removes a later grant. The next waiter's poll takes the
 * lock with a higher token (the counter only rises), and a live holder's next renewal, a CAS on its
 * own item, fails: its lease turns invalid and {@code onLost} runs.
 *
 * <p>Concurrency: stateless but for the watches; each watch polls on a thread of its own, never on
 * the backend's timer thread (whose polls serve the waiters). Reads block the caller up to a few
 * connect timeouts.
 */
final class MemcachedInspector implements LockInspector {
    /** How often a busy crawler (another inspection, or a crawl of memcached's own) is asked again. */
    private static final int BUSY_RETRIES = 100;

    private static final long BUSY_SLEEP_MS = 20;

    /** How long a watch waits for a new holder's token before it reports the holder without one. */
    private static final long TOKENLESS_REPORT_NANOS =
            4 * MemcachedLockProtocol.RECORD_DELAY_NANOS + TimeUnit.MILLISECONDS.toNanos(500);

    private final MemcachedBackend backend;
    private final MemcachedLockProtocol protocol;
    private final String prefix;

    MemcachedInspector(MemcachedBackend backend, MemcachedLockProtocol protocol) {
        this.backend = backend;
        this.protocol = protocol;
        this.prefix = backend.uri.keyPrefix();
    }

    @Override
    public List<LockSnapshot> inspect(String namePrefix) {
        Objects.requireNonNull(namePrefix, "namePrefix");
        String locks = prefix + ":l:";
        String waiting = prefix + ":w:";
        TreeMap<String, List<String>> waiterKeysByName = new TreeMap<>();
        for (Server server : backend.servers()) {
            // The crawler is no snapshot: an item rewritten while it walks (a waiter key refreshed at
            // its poll) can be missed, so a key counts if either of two walks saw it.
            TreeSet<String> seen = new TreeSet<>(dump(server));
            seen.addAll(dump(server));
            for (String key : seen) {
                if (key.startsWith(locks)) {
                    String name = key.substring(locks.length());
                    if (name.startsWith(namePrefix)) {
                        waiterKeysByName.computeIfAbsent(name, n -> new ArrayList<>());
                    }
                } else if (key.startsWith(waiting)) {
                    int cut = key.lastIndexOf(':');
                    String name = key.substring(waiting.length(), Math.max(waiting.length(), cut));
                    if (cut > waiting.length() && name.startsWith(namePrefix)) {
                        waiterKeysByName
                                .computeIfAbsent(name, n -> new ArrayList<>())
                                .add(key);
                    }
                }
            }
        }
        List<LockSnapshot> out = new ArrayList<>();
        for (Map.Entry<String, List<String>> e : waiterKeysByName.entrySet()) {
            LockSnapshot s = read(e.getKey(), e.getValue());
            if (s != null) {
                out.add(s);
            }
        }
        return out;
    }

    /** One lock's state: its key read directly, its waiters from the keys a dump found. */
    private @Nullable LockSnapshot read(String name, List<String> waiterKeys) {
        Server server = backend.serverFor(name);
        List<Command> commands = new ArrayList<>();
        commands.add(Command.of("mg " + protocol.lockKey(name) + " v c t"));
        commands.add(Command.of("mg " + protocol.grantKey(name) + " v"));
        for (String k : waiterKeys) {
            commands.add(Command.of("mg " + k + " v t"));
        }
        List<Reply> replies = call(server, name, commands);
        Map<String, Reply> clients = new HashMap<>();
        List<EntrySnapshot> holders = new ArrayList<>();
        Reply lock = replies.get(0);
        String[] holder = null;
        if (lock.status().equals("VA") && lock.value() != null) {
            holder = lock.value().split(" ");
            clients.put(holder.length > 1 ? holder[1] : "", lock);
        }
        List<String[]> waiterValues = new ArrayList<>();
        List<Reply> waiterReplies = new ArrayList<>();
        for (int i = 0; i < waiterKeys.size(); i++) {
            Reply r = replies.get(i + 2);
            if (r.status().equals("VA") && r.value() != null) {
                String[] v = r.value().split(" ");
                waiterValues.add(v);
                waiterReplies.add(r);
                clients.put(v[0], r);
            } else {
                waiterValues.add(new String[0]);
                waiterReplies.add(r);
            }
        }
        Map<String, String[]> info = clientInfo(server, name, clients.keySet());
        if (holder != null && holder.length >= 2) {
            String[] hp = info.get(holder[1]);
            long token = holder.length >= 4 ? parseLong(holder[2]) : 0;
            long since = holder.length >= 4 ? parseLong(holder[3]) : 0;
            Reply grant = replies.get(1);
            if (token == 0 && grant.status().equals("VA") && grant.value() != null) {
                String[] g = grant.value().split(" ");
                if (g.length == 3 && g[0].equals(holder[0])) {
                    token = parseLong(g[1]);
                    since = parseLong(g[2]);
                }
            }
            holders.add(new EntrySnapshot(
                    protocol.lockKey(name) + "#" + holder[0],
                    LockMode.EXCLUSIVE,
                    1,
                    holder[1],
                    hp == null ? null : hp[0],
                    hp == null ? -1 : parseLong(hp[1]),
                    null,
                    token,
                    since > 0 ? Instant.ofEpochMilli(since) : null,
                    ttl(lock)));
        }
        record Waiting(EntrySnapshot entry, long since) {}
        List<Waiting> waiters = new ArrayList<>();
        for (int i = 0; i < waiterKeys.size(); i++) {
            String[] v = waiterValues.get(i);
            if (v.length == 0 || holder != null && v.length >= 3 && v[2].equals(holder[0])) {
                continue; // gone since the dump, or granted and about to be deleted
            }
            String[] hp = info.get(v[0]);
            long since = v.length >= 2 ? parseLong(v[1]) : 0;
            waiters.add(new Waiting(
                    new EntrySnapshot(
                            waiterKeys.get(i),
                            LockMode.EXCLUSIVE,
                            1,
                            v[0],
                            hp == null ? null : hp[0],
                            hp == null ? -1 : parseLong(hp[1]),
                            null,
                            0,
                            since > 0 ? Instant.ofEpochMilli(since) : null,
                            ttl(waiterReplies.get(i))),
                    since));
        }
        if (holders.isEmpty() && waiters.isEmpty()) {
            return null;
        }
        waiters.sort(Comparator.comparingLong(Waiting::since));
        return new LockSnapshot(
                name,
                LockKind.EXCLUSIVE,
                1,
                holders,
                waiters.stream().map(Waiting::entry).toList());
    }

    /** Host and pid of each client, from its info key: {@code [host, pid]}. */
    private Map<String, String[]> clientInfo(Server server, String name, Collection<String> clientIds) {
        List<String> ids = new ArrayList<>(new TreeSet<>(clientIds));
        ids.removeIf(String::isEmpty);
        Map<String, String[]> out = new HashMap<>();
        if (ids.isEmpty()) {
            return out;
        }
        List<Command> commands = new ArrayList<>();
        for (String id : ids) {
            commands.add(Command.of("mg " + MemcachedBackend.infoKey(id) + " v"));
        }
        List<Reply> replies = call(server, name, commands);
        for (int i = 0; i < ids.size(); i++) {
            Reply r = replies.get(i);
            if (r.status().equals("VA") && r.value() != null) {
                String[] hp = r.value().split(" ");
                if (hp.length == 2) {
                    out.put(ids.get(i), hp);
                }
            }
        }
        return out;
    }

    private static @Nullable Duration ttl(Reply r) {
        long t = r.flagLong('t');
        return t < 0 ? null : Duration.ofSeconds(t);
    }

    private static long parseLong(String s) {
        try {
            return Long.parseLong(s);
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    @Override
    public List<String> forceRelease(String name, Collection<String> keys) {
        if (name.isEmpty()) {
            throw new IllegalArgumentException("a lock name is required");
        }
        String lockKey = protocol.lockKey(name);
        List<String> acquisitions = new ArrayList<>();
        for (String key : keys) {
            if (!key.startsWith(lockKey + "#") || key.length() == lockKey.length() + 1) {
                throw new IllegalArgumentException("'" + key + "' is no entry of lock '" + name + "'");
            }
            acquisitions.add(key.substring(lockKey.length() + 1));
        }
        Server server = backend.serverFor(name);
        List<String> removed = new ArrayList<>();
        List<String> keyList = List.copyOf(keys);
        for (int i = 0; i < keyList.size(); i++) {
            String acquisition = acquisitions.get(i);
            // A live holder's renewal changes the CAS between our read and our delete: read again.
            for (int attempt = 0; attempt < 5; attempt++) {
                Reply got = call(server, name, List.of(Command.of("mg " + lockKey + " v c")))
                        .get(0);
                if (!got.status().equals("VA")
                        || got.value() == null
                        || !got.value().startsWith(acquisition + " ")) {
                    break; // released, expired or granted again: nothing of this grant left
                }
                Reply deleted = call(server, name, List.of(Command.of("md " + lockKey + " C" + got.flagLong('c'))))
                        .get(0);
                if (deleted.status().equals("HD")) {
                    removed.add(keyList.get(i));
                    break;
                }
                if (deleted.isError()) {
                    throw new LockBackendException(
                            name, MemcachedBackend.NAME, "forced release refused by memcached: " + deleted, null);
                }
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
        return new Poller(name, pollInterval, listener, onError);
    }

    /** Reads the lock every interval and reports it when its holders or waiters changed. */
    private final class Poller implements Watch {
        private final String name;
        private final Consumer<List<LockSnapshot>> listener;
        private final Consumer<Throwable> onError;
        private final ScheduledExecutorService thread;
        private final AtomicBoolean closed = new AtomicBoolean();
        // Only the watch's thread touches these.
        private @Nullable List<String> last;
        private long tokenlessSince = -1;

        Poller(String name, Duration interval, Consumer<List<LockSnapshot>> listener, Consumer<Throwable> onError) {
            this.name = name;
            this.listener = listener;
            this.onError = onError;
            this.thread = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "dlock-memcached-watch");
                t.setDaemon(true);
                return t;
            });
            long ms = Math.max(1, interval.toMillis());
            thread.scheduleWithFixedDelay(this::poll, 0, ms, TimeUnit.MILLISECONDS);
        }

        private void poll() {
            if (closed.get()) {
                return;
            }
            try {
                List<LockSnapshot> now = inspect(name).stream()
                        .filter(l -> l.name().equals(name))
                        .toList();
                List<String> signature = new ArrayList<>();
                boolean tokenless = false;
                for (LockSnapshot l : now) {
                    for (EntrySnapshot e : l.holders()) {
                        signature.add("H " + e.key() + " " + e.leaseToken());
                        tokenless |= e.leaseToken() == 0;
                    }
                    l.waiters().forEach(e -> signature.add("W " + e.key()));
                }
                // A grant's token is recorded a moment after it (RECORD_DELAY_NANOS): report the grant
                // with its token, unless it stays without one (its holder died first).
                long t = System.nanoTime();
                if (!tokenless) {
                    tokenlessSince = -1;
                } else if (tokenlessSince < 0) {
                    tokenlessSince = t;
                }
                boolean settled = tokenlessSince < 0 || t - tokenlessSince > TOKENLESS_REPORT_NANOS;
                if (settled && !signature.equals(last) && !closed.get()) {
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
                thread.shutdownNow();
            }
        }
    }

    @Override
    public List<DataLossFence> fences() {
        List<DataLossFence> out = new ArrayList<>();
        for (Server server : backend.servers()) {
            List<Reply> r = call(server, null, List.of(DataLossGuard.read(), Command.statsCommand()));
            DataLossGuard.Verdict v = DataLossGuard.judge(r.get(0));
            long now = DataLossGuard.statsTime(r.get(1));
            String scope = "memcached at " + server.label;
            if (v.state() == DataLossGuard.State.QUARANTINED) {
                out.add(new DataLossFence(
                        scope,
                        Instant.ofEpochSecond(v.quarantineEnd()),
                        "its boot marker says it lost its data (restart, flush or eviction) or is new, less than"
                                + " the quarantine ago"));
            } else if (v.state() == DataLossGuard.State.MISSING) {
                long end = backend.guard.quarantineEnd(now, DataLossGuard.statsUptime(r.get(1)));
                out.add(new DataLossFence(
                        scope,
                        Instant.ofEpochSecond(end),
                        "no boot marker (a new server, or one that lost its data): the next client starts a"
                                + " quarantine of the lease time + 1 s, counted from the server's start where that"
                                + " was less than a lease ago; run 'dlock init' once on a brand-new server"));
            }
        }
        return out;
    }

    /**
     * Marks each server new, if none holds a key under this prefix and its boot marker is missing or
     * is the quarantine this very client started when it connected (a connect to a server without a
     * marker writes one before anything else can run).
     */
    @Override
    public String initialize() {
        String mine = prefix + ":";
        for (Server server : backend.servers()) {
            for (String key : dump(server)) {
                // The marker and the clients' info keys live under "dlock:" whatever the prefix.
                boolean dlocks = key.equals(DataLossGuard.MARKER_KEY) || key.startsWith(MemcachedBackend.infoKey(""));
                if (key.startsWith(mine) && !dlocks) {
                    throw new IllegalStateException("memcached at " + server.label + " holds keys under prefix '"
                            + prefix + "' (for example " + key + "): it was used before; not marked. Only a"
                            + " brand-new deployment may be, and a server that lost its data must wait out its"
                            + " quarantine");
                }
            }
        }
        int marked = 0;
        for (Server server : backend.servers()) {
            List<Reply> r = call(
                    server,
                    null,
                    List.of(Command.of("mg " + DataLossGuard.MARKER_KEY + " v c"), Command.statsCommand()));
            long now = DataLossGuard.statsTime(r.get(1));
            Reply marker = r.get(0);
            String mode;
            if (marker.status().equals("EN")) {
                mode = "ME";
            } else if (marker.value() != null && marker.value().equals(server.ownMarker)) {
                mode = "C" + marker.flagLong('c');
            } else {
                throw new IllegalStateException("memcached at " + server.label + " has a boot marker another"
                        + " client wrote ('" + marker.value() + "'): it was in use before; not marked");
            }
            Reply written = call(server, null, List.of(DataLossGuard.markNew(now, mode)))
                    .get(0);
            if (!written.status().equals("HD")) {
                throw new IllegalStateException("memcached at " + server.label
                        + ": another client wrote the boot marker meanwhile (" + written + "); not marked");
            }
            server.ownMarker = null;
            marked++;
        }
        return "marked " + marked + " memcached server(s) as new: no quarantine before the first grants";
    }

    // ---- server access

    private List<Reply> call(Server server, @Nullable String name, List<Command> commands) {
        long wait = 2 * backend.options.connectTimeout().toMillis();
        List<Reply> replies;
        try {
            replies = server.send(commands).get(wait, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            Throwable cause = MemcachedLockProtocol.unwrap(e.getCause() == null ? e : e.getCause());
            throw new LockBackendException(
                    name, MemcachedBackend.NAME, "inspection failed at " + server.label + ": " + cause, cause);
        } catch (TimeoutException e) {
            throw new LockBackendException(
                    name, MemcachedBackend.NAME, server.label + " did not answer within " + wait + " ms", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LockBackendException(name, MemcachedBackend.NAME, "interrupted while reading the server", e);
        }
        for (Reply r : replies) {
            if (r.isError()) {
                throw new LockBackendException(
                        name,
                        MemcachedBackend.NAME,
                        "inspection refused by memcached at " + server.label + ": " + r,
                        null);
            }
        }
        return replies;
    }

    /**
     * Every key of {@code server}, from {@code lru_crawler metadump hash} on a connection of its own
     * (memcached refuses anything pipelined with a dump, and the shared connection carries locks).
     */
    private List<String> dump(Server server) {
        int timeout = (int)
                Math.min(Integer.MAX_VALUE, 2 * backend.options.connectTimeout().toMillis());
        for (int attempt = 0; attempt < BUSY_RETRIES; attempt++) {
            List<String> keys = new ArrayList<>();
            String last;
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(server.address.getHostString(), server.address.getPort()), timeout);
                s.setSoTimeout(timeout);
                OutputStream out = s.getOutputStream();
                InputStream in = s.getInputStream();
                if (backend.uri.authenticates()) {
                    byte[] data = (backend.uri.user() + " " + backend.uri.password()).getBytes(StandardCharsets.UTF_8);
                    out.write(("set dlock:auth 0 0 " + data.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
                    out.write(data);
                    out.write(new byte[] {'\r', '\n'});
                    out.flush();
                    String answer = readLine(in);
                    if (!answer.equals("STORED")) {
                        throw new IOException("authentication refused: " + answer);
                    }
                }
                out.write("lru_crawler metadump hash\r\n".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                while (true) {
                    String line = readLine(in);
                    if (!line.startsWith("key=")) {
                        last = line;
                        break;
                    }
                    int end = line.indexOf(' ');
                    keys.add(percentDecode(line.substring(4, end < 0 ? line.length() : end)));
                }
            } catch (IOException e) {
                throw new LockBackendException(
                        null,
                        MemcachedBackend.NAME,
                        "listing the keys of memcached at " + server.label + " failed: " + e,
                        e);
            }
            if (last.equals("END")) {
                return keys;
            }
            if (!last.startsWith("BUSY")) {
                throw new LockBackendException(
                        null,
                        MemcachedBackend.NAME,
                        "memcached at " + server.label + " refused 'lru_crawler metadump hash' (dlock inspect needs"
                                + " memcached 1.6 with its LRU crawler on): " + last,
                        null);
            }
            try {
                Thread.sleep(BUSY_SLEEP_MS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new LockBackendException(null, MemcachedBackend.NAME, "interrupted while listing keys", e);
            }
        }
        throw new LockBackendException(
                null,
                MemcachedBackend.NAME,
                "memcached at " + server.label + "'s LRU crawler stayed busy for " + BUSY_RETRIES * BUSY_SLEEP_MS
                        + " ms",
                null);
    }

    /** One line: metadump ends key lines with a bare LF, everything else with CRLF. */
    private static String readLine(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream(128);
        while (true) {
            int c = in.read();
            if (c < 0) {
                throw new IOException("the server closed the connection");
            }
            if (c == '\n') {
                break;
            }
            b.write(c);
        }
        String line = b.toString(StandardCharsets.UTF_8);
        return line.endsWith("\r") ? line.substring(0, line.length() - 1) : line;
    }

    /** memcached's metadump encodes keys as URIs do ({@code %3A}); a '+' stays a '+'. */
    static String percentDecode(String s) {
        if (s.indexOf('%') < 0) {
            return s;
        }
        ByteArrayOutputStream b = new ByteArrayOutputStream(s.length());
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '%' && i + 2 < s.length()) {
                b.write(Integer.parseInt(s.substring(i + 1, i + 3), 16));
                i += 2;
            } else {
                b.writeBytes(String.valueOf(c).getBytes(StandardCharsets.UTF_8));
            }
        }
        return b.toString(StandardCharsets.UTF_8);
    }
}
