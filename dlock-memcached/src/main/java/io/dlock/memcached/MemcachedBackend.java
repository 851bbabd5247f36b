package io.dlock.memcached;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import io.dlock.Capability;
import io.dlock.LockBackendException;
import io.dlock.LockOptions;
import io.dlock.memcached.MetaConnection.Command;
import io.dlock.memcached.MetaConnection.IoLoop;
import io.dlock.memcached.MetaConnection.MemcachedIoException;
import io.dlock.memcached.MetaConnection.Reply;
import io.dlock.spi.ConnectionState;
import io.dlock.spi.DataLossFence;
import io.dlock.spi.DataLossFences;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockProtocol;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * dlock's connections to one or more memcached servers: one {@link MetaConnection} per server, all
 * served by one I/O thread; one timer thread that is also the client's only poller; lock names
 * spread over the servers by consistent hashing (a name always lives on one server).
 *
 * <p>Concurrency: connection changes are reported on the timer thread, in order. The engine hears
 * SUSPENDED (and declares every lease lost if it lasts longer than a third of the lease time) only
 * when no server is connected, and RECONNECTED when one is back: with several servers, one server's
 * loss is its own locks' business. Their renewals fail with {@link io.dlock.spi.EntryLostException}
 * once it has been unreachable for that same third of the lease ({@link Server#downForNanos()}),
 * and their acquires and waits fail once a reconnect attempt has failed ({@link
 * Server#mayReconnectSoon()}). Grants are not checked on reconnect: each lease's next renewal checks
 * its own key, and a data loss cannot let anyone else in while it may still be valid ({@link
 * DataLossGuard}).
 *
 * <p>Failure: connecting fails with {@link LockBackendException} within the connect timeout per
 * server and closes what it opened. Later, a dropped connection is opened again in the background
 * with the retry policy's back-off; requests made meanwhile fail at once (the protocol retries). A
 * request unanswered for the connect timeout closes its connection (a dead peer that sent no FIN),
 * which makes it reconnect.
 */
final class MemcachedBackend implements LockBackend {
    private static final Logger log = LoggerFactory.getLogger(MemcachedBackend.class);
    static final String NAME = "memcached";
    private static final int POINTS_PER_SERVER = 160;

    final MemcachedUri uri;
    final LockOptions options;
    final String clientId = UUID.randomUUID().toString();
    final DataLossGuard guard;
    /** The quarantines this client's acquires ran into, for messages and health. */
    final DataLossFences fences = new DataLossFences(NAME, "servers");

    private final ScheduledThreadPoolExecutor timer;
    private final ExecutorService connector;
    private final IoLoop loop;
    private final List<Server> servers = new ArrayList<>();
    private final TreeMap<Long, Server> ring = new TreeMap<>();
    private final List<Consumer<ConnectionState>> listeners = new CopyOnWriteArrayList<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final AtomicInteger down = new AtomicInteger();
    private final Set<Capability> capabilities = Set.copyOf(EnumSet.of(
            Capability.EXCLUSIVE,
            Capability.FENCING_TOKENS,
            Capability.MULTI_LOCK,
            Capability.LOST_DETECTION,
            Capability.CRASH_RELEASE,
            Capability.RENEWAL));
    private final MemcachedLockProtocol protocol;
    private final MemcachedInspector inspector;
    /** This client's {@code "<host> <pid>"}, written once per connection to its info key. */
    private final String info = hostName() + " " + ProcessHandle.current().pid();

    private volatile @Nullable ScheduledFuture<?> watchdog;
    private volatile @Nullable ScheduledFuture<?> infoRefresh;

    /** One server: its current connection, its clock as last seen, its reconnect state. */
    final class Server {
        final InetSocketAddress address;
        final String label;
        private volatile @Nullable MetaConnection connection;
        private long generations;
        private volatile long serverSeconds;
        private volatile long seenAtNanos;
        private int reconnectAttempt;
        /** When the connection was lost (the options' ticker), valid while {@code connection} is null. */
        private volatile long downSinceNanos;
        /** Set when a reconnect attempt failed: the server is down, not just a dropped connection. */
        private volatile boolean unreachable;

        Server(InetSocketAddress address) {
            this.address = address;
            this.label = address.getHostString() + ":" + address.getPort();
        }

        /** Sends a pipeline; completes with every reply, or fails with the first transport failure. */
        CompletableFuture<List<Reply>> send(List<Command> commands) {
            return send(commands, false);
        }

        /**
         * Sends a pipeline; with {@code assist}, the calling thread, which is about to wait for the
         * reply anyway, may read it itself for up to a millisecond ({@link MetaConnection#send(List,
         * long, boolean)}).
         */
        CompletableFuture<List<Reply>> send(List<Command> commands, boolean assist) {
            MetaConnection c = connection;
            if (c == null) {
                return CompletableFuture.failedFuture(new MemcachedIoException(
                        "not connected to memcached at " + label + " (unreachable for "
                                + TimeUnit.NANOSECONDS.toMillis(downForNanos()) + " ms)",
                        null));
            }
            return c.send(commands, System.nanoTime(), assist);
        }

        /** How long this server has been unreachable; 0 while connected. */
        long downForNanos() {
            if (connection != null) {
                return 0;
            }
            return Math.max(0, options.ticker().read() - downSinceNanos);
        }

        /**
         * Whether a request that found no connection is worth retrying: no reconnect attempt has
         * failed yet (a dropped connection to a live server is back at the first attempt). Once one
         * has, the server is down, and requests for its locks fail at once instead of waiting out the
         * retry policy.
         */
        boolean mayReconnectSoon() {
            return connection != null || !unreachable;
        }

        /** The generation of the current connection: a CAS value read on it is from this server life. */
        long generation() {
            MetaConnection c = connection;
            return c == null ? -1 : c.generation();
        }

        /** The boot marker this client wrote to a server that had none, until {@code dlock init} replaces it. */
        volatile @Nullable String ownMarker;

        /** Records the server's clock from a marker reading. */
        void sawClock(long seconds) {
            if (seconds > 0) {
                serverSeconds = seconds;
                seenAtNanos = options.ticker().read();
            }
        }

        /** The server's clock now, estimated from the last reading (seconds). */
        long estimatedSeconds() {
            long s = serverSeconds;
            return s + Math.max(0, (options.ticker().read() - seenAtNanos) / 1_000_000_000L);
        }

        private synchronized long nextGeneration() {
            return ++generations;
        }

        /** Opens a connection and checks that the server speaks the meta protocol. Blocking. */
        void connect() throws IOException {
            InetSocketAddress resolved = new InetSocketAddress(address.getHostString(), address.getPort());
            if (resolved.isUnresolved()) {
                throw new IOException("unknown host '" + address.getHostString() + "'");
            }
            MetaConnection c = MetaConnection.open(
                    resolved,
                    nextGeneration(),
                    loop,
                    options.connectTimeout().toMillis(),
                    MemcachedBackend.this::onClosed);
            boolean quarantined;
            try {
                long wait = options.connectTimeout().toMillis();
                if (uri.authenticates()) {
                    authenticate(c, wait);
                }
                // mn alone first: something that is not memcached answers it with one line, and
                // waiting for a second reply would hide what it said behind a timeout.
                Reply mn = c.send(List.of(Command.of("mn")), System.nanoTime())
                        .get(wait, TimeUnit.MILLISECONDS)
                        .get(0);
                if (mn.isError() && String.valueOf(mn.value()).contains("unauthenticated")) {
                    throw new IOException(label + " requires authentication (memcached run with -Y): give"
                            + " memcached://user:password@host in the URI");
                }
                if (!mn.status().equals("MN")) {
                    throw new IOException(label + " does not speak memcached's meta protocol (dlock needs memcached"
                            + " 1.6 or later); it answered 'mn' with " + mn);
                }
                DataLossGuard.Verdict v = DataLossGuard.judge(c.send(List.of(DataLossGuard.read()), System.nanoTime())
                        .get(wait, TimeUnit.MILLISECONDS)
                        .get(0));
                if (v.state() == DataLossGuard.State.MISSING) {
                    startQuarantine(c).get(wait, TimeUnit.MILLISECONDS);
                } else {
                    sawClock(v.serverSeconds());
                }
                quarantined = v.state() != DataLossGuard.State.OPEN;
                Reply written = c.send(List.of(writeInfo()), System.nanoTime())
                        .get(wait, TimeUnit.MILLISECONDS)
                        .get(0);
                if (written.isError()) {
                    throw new IOException("writing the client's info key failed: " + written);
                }
            } catch (TimeoutException e) {
                c.close(e);
                throw new IOException(
                        label + " did not answer within the connect timeout ("
                                + options.connectTimeout().toMillis() + " ms)",
                        e);
            } catch (java.util.concurrent.ExecutionException e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                c.close(cause);
                throw cause instanceof IOException io ? io : new IOException(cause.getMessage(), e);
            } catch (InterruptedException e) {
                c.close(e);
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while connecting to " + label, e);
            } catch (IOException | RuntimeException e) {
                c.close(e);
                throw e;
            }
            unreachable = false;
            connection = c;
            if (quarantined) {
                watchQuarantine();
            }
        }

        /**
         * memcached's ASCII authentication (a server run with {@code -Y}): a {@code set} of any key
         * whose data is {@code "user password"}, answered {@code STORED}; the server answers {@code
         * CLIENT_ERROR} and closes the connection otherwise. Blocking, up to {@code waitMs}.
         */
        private void authenticate(MetaConnection c, long waitMs)
                throws IOException, InterruptedException, java.util.concurrent.ExecutionException, TimeoutException {
            // A server without -Y would store the credentials as an item anyone can read: ask first.
            Reply probe = c.send(List.of(Command.of("mn")), System.nanoTime())
                    .get(waitMs, TimeUnit.MILLISECONDS)
                    .get(0);
            if (probe.status().equals("MN")) {
                throw new IOException("the URI has credentials, but memcached at " + label + " does not ask for"
                        + " authentication (not run with -Y); dlock does not send the password to a server that"
                        + " would store it as an item");
            }
            byte[] data = (uri.user() + " " + uri.password()).getBytes(StandardCharsets.UTF_8);
            byte[] head = ("set dlock:auth 0 0 " + data.length + "\r\n").getBytes(StandardCharsets.US_ASCII);
            byte[] bytes = new byte[head.length + data.length + 2];
            System.arraycopy(head, 0, bytes, 0, head.length);
            System.arraycopy(data, 0, bytes, head.length, data.length);
            bytes[bytes.length - 2] = '\r';
            bytes[bytes.length - 1] = '\n';
            Reply r;
            try {
                r = c.send(List.of(new Command(bytes, false)), System.nanoTime())
                        .get(waitMs, TimeUnit.MILLISECONDS)
                        .get(0);
            } catch (java.util.concurrent.ExecutionException e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                throw new IOException(
                        "authentication as '" + uri.user() + "' failed: the server closed the connection ("
                                + cause.getMessage() + ")",
                        cause);
            }
            if (!r.status().equals("STORED")) {
                throw new IOException("authentication as '" + uri.user() + "' refused: the server answered " + r
                        + (r.value() != null && r.value().contains("unauthenticated")
                                ? " (wrong user or password, or memcached not run with -Y)"
                                : ""));
            }
        }

        /** Writes a new boot marker after a data loss (the first writer wins); completes when done. */
        CompletableFuture<Void> startQuarantine() {
            MetaConnection c = connection;
            return c == null
                    ? CompletableFuture.failedFuture(new MemcachedIoException("not connected to " + label, null))
                    : startQuarantine(c);
        }

        private CompletableFuture<Void> startQuarantine(MetaConnection c) {
            // stats and the marker's add on one connection: a restart between them breaks it, so the
            // marker is never dated by another server life's start (DataLossGuard).
            return c.send(List.of(Command.statsCommand()), System.nanoTime())
                    .thenCompose(replies -> {
                        Reply stats = replies.get(0);
                        long now = DataLossGuard.statsTime(stats);
                        long uptime = DataLossGuard.statsUptime(stats);
                        sawClock(now);
                        long up = Math.max(0, uptime - DataLossGuard.START_DATED_EARLY_SECONDS);
                        fences.noticed(
                                "memcached at " + label,
                                (guard.quarantineEnd(now, uptime) - now) * 1000,
                                "it had no boot marker: it lost its data (restart, flush or eviction; up " + up
                                        + " s) or is new (run 'dlock init' once on a brand-new server)");
                        String value = guard.quarantineValue(now, uptime);
                        return c.send(List.of(DataLossGuard.writeMarker(value, now, "ME")), System.nanoTime())
                                .thenApply(written -> {
                                    if (written.get(0).status().equals("HD")) {
                                        ownMarker = value;
                                    }
                                    return written;
                                });
                    })
                    .thenAccept(replies -> {
                        Reply written = replies.get(0);
                        if (written.isError()) {
                            throw new CompletionException(
                                    new IOException("writing the boot marker failed: " + written));
                        }
                        watchQuarantine();
                    });
        }

        // ---- the quarantine's end, noticed promptly

        /*
         * Waiters in a quarantine poll again when their last reading said it ends, which is whole
         * seconds on memcached's clock: up to a second late. One probe per server and client reads
         * the marker instead (one mg, nothing else) and kicks this client's waiters as soon as it
         * reads the end. It learns when the server's clock ticks (the reading changes between two
         * probes at most PROBE_MS apart) and then sleeps until just before the tick that ends the
         * quarantine. Bounded: at most `probesLeft` probes per quarantine, and it stops when the
         * connection goes (the reconnect kicks every waiter anyway).
         */

        private final AtomicBoolean probing = new AtomicBoolean();

        @GuardedBy("this")
        private int probesLeft;

        /** The last probe: when it was sent (ticker) and the clock it read; -1 before the first. */
        @GuardedBy("this")
        private long lastProbeSentAt;

        @GuardedBy("this")
        private long lastProbeReading = -1;

        /** When the clock last ticked (ticker, at most PROBE_MS + a round trip early), or MIN_VALUE. */
        @GuardedBy("this")
        private long tickAt = Long.MIN_VALUE;

        @GuardedBy("this")
        private long tickReading;

        /** Starts the probe unless one runs. */
        void watchQuarantine() {
            if (!probing.compareAndSet(false, true)) {
                return;
            }
            synchronized (this) {
                probesLeft = (int) Math.min(MAX_PROBES, (guard.quarantineSecondsWithSlack() + 2) * 1000 / PROBE_MS);
                lastProbeReading = -1;
                tickAt = Long.MIN_VALUE;
            }
            if (schedule(this::probe, 0) == null) {
                probing.set(false);
            }
        }

        private void probe() {
            MetaConnection c = connection;
            boolean go;
            long sentAt = options.ticker().read();
            synchronized (this) {
                go = c != null && !closed.get() && probesLeft-- > 0;
            }
            if (!go || c == null) {
                probing.set(false);
                return;
            }
            c.send(List.of(DataLossGuard.read()), System.nanoTime()).whenComplete((r, e) -> {
                DataLossGuard.Verdict v;
                try {
                    if (e != null) {
                        probing.set(false);
                        return;
                    }
                    v = DataLossGuard.judge(r.get(0));
                } catch (RuntimeException x) {
                    probing.set(false);
                    return;
                }
                if (v.state() != DataLossGuard.State.QUARANTINED) {
                    probing.set(false);
                    if (v.state() == DataLossGuard.State.OPEN) {
                        sawClock(v.serverSeconds());
                    }
                    log.debug("[client={}] memcached at {}: quarantine over ({})", NAME, label, v.state());
                    protocol.kickAll();
                    return;
                }
                sawClock(v.serverSeconds());
                long delay = nextProbeDelay(v, sentAt, options.ticker().read());
                if (schedule(this::probe, delay) == null) {
                    probing.set(false);
                }
            });
        }

        /** How long until the next probe, learning the clock's ticks from this probe's reading. */
        private synchronized long nextProbeDelay(DataLossGuard.Verdict v, long sentAt, long now) {
            long reading = v.serverSeconds();
            if (lastProbeReading >= 0
                    && reading > lastProbeReading
                    && sentAt - lastProbeSentAt <= TimeUnit.MILLISECONDS.toNanos(2 * PROBE_MS)) {
                tickAt = lastProbeSentAt; // the tick came after the last probe was sent
                tickReading = reading;
            }
            lastProbeSentAt = sentAt;
            lastProbeReading = reading;
            if (tickAt == Long.MIN_VALUE) {
                long left = v.quarantineEnd() - reading;
                // Phase not known yet: find the next tick, within the last two seconds of a long quarantine.
                return left >= 3 ? TimeUnit.SECONDS.toMillis(left - 2) : PROBE_MS;
            }
            // The tick that ends it, if each tick adds one second; probe from just before it.
            long endTick = tickAt + TimeUnit.SECONDS.toNanos(v.quarantineEnd() - tickReading);
            long untilMs = TimeUnit.NANOSECONDS.toMillis(endTick - now) - FINAL_PROBE_MS;
            return untilMs > FINAL_PROBE_MS ? untilMs : FINAL_PROBE_MS;
        }

        @Override
        public String toString() {
            return label;
        }
    }

    /**
     * The key of client {@code clientId}'s host and pid, for {@code dlock inspect}: outside the
     * namespace (as the boot marker is), since client ids are unique and the namespace holds locks.
     */
    static String infoKey(String clientId) {
        return "dlock:c:" + clientId;
    }

    /**
     * This client's info key: written at each connect (a restarted server lost it) and refreshed
     * every {@link #INFO_REFRESH_SECONDS}; deleted at close, left to its TTL after a crash.
     */
    private Command writeInfo() {
        return Command.set(infoKey(clientId), info, "T" + INFO_TTL_SECONDS);
    }

    static final long INFO_TTL_SECONDS = 3 * 3600;

    /** Probe interval while learning when a quarantined server's clock ticks (ms). */
    static final long PROBE_MS = 10;

    /** Probe interval around the tick that ends a quarantine (ms). */
    static final long FINAL_PROBE_MS = 2;

    /** At most this many probes per quarantine. */
    static final int MAX_PROBES = 2_000;

    static final long INFO_REFRESH_SECONDS = 3600;

    private static String hostName() {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            host = System.getenv().getOrDefault("HOSTNAME", "unknown");
        }
        // The value is space-separated, and a memcached value line must not break.
        return host.isBlank() ? "unknown" : host.replaceAll("[\\s]", "_");
    }

    private void refreshInfo() {
        for (Server s : servers) {
            s.send(List.of(writeInfo()));
        }
    }

    private MemcachedBackend(MemcachedUri uri) throws IOException {
        this.uri = uri;
        this.options = uri.options();
        this.guard = new DataLossGuard(
                ceilSeconds(uri.quarantine()), ceilSeconds(uri.options().leaseTime()));
        this.loop = new IoLoop("dlock-memcached-io");
        this.timer = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "dlock-memcached-timer");
            t.setDaemon(true);
            return t;
        });
        this.timer.setRemoveOnCancelPolicy(true);
        this.connector = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "dlock-memcached-connect");
            t.setDaemon(true);
            return t;
        });
        for (InetSocketAddress a : uri.hosts()) {
            Server s = new Server(a);
            servers.add(s);
            for (int i = 0; i < POINTS_PER_SERVER; i++) {
                ring.put(hash(s.label + "-" + i), s);
            }
        }
        this.protocol = new MemcachedLockProtocol(this);
        this.inspector = new MemcachedInspector(this, protocol);
    }

    /**
     * Connects to every server of {@code uri}.
     *
     * <p>Blocking: up to about the connect timeout per server. On failure: {@link
     * LockBackendException} naming the server and the reason, with nothing left open.
     */
    static MemcachedBackend connect(MemcachedUri uri) {
        MemcachedBackend b;
        try {
            b = new MemcachedBackend(uri);
        } catch (IOException e) {
            throw new LockBackendException(null, NAME, "cannot start the memcached client: " + e, e);
        }
        for (Server s : b.servers) {
            try {
                s.connect();
            } catch (IOException | RuntimeException e) {
                b.close();
                throw new LockBackendException(
                        null, NAME, "cannot connect to memcached at " + s.label + ": " + describe(e), e);
            }
        }
        long tick = Math.max(50, Math.min(1000, uri.options().connectTimeout().toMillis() / 4));
        b.watchdog = b.timer.scheduleWithFixedDelay(b::checkTimeouts, tick, tick, TimeUnit.MILLISECONDS);
        b.infoRefresh = b.timer.scheduleWithFixedDelay(
                b::refreshInfo, INFO_REFRESH_SECONDS, INFO_REFRESH_SECONDS, TimeUnit.SECONDS);
        log.debug("[client={}] connected to {} as client {}", NAME, uri, b.clientId);
        return b;
    }

    private static String describe(Throwable e) {
        String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        if (e instanceof java.net.ConnectException || m.contains("Connection refused")) {
            return m + " (is memcached running there?)";
        }
        if (e instanceof java.net.SocketTimeoutException) {
            return "no answer to the TCP connect within the connect timeout (" + m + ")";
        }
        return m;
    }

    static long ceilSeconds(Duration d) {
        return (d.toMillis() + 999) / 1000;
    }

    /** The server a lock name lives on. */
    Server serverFor(String lockName) {
        if (servers.size() == 1) {
            return servers.get(0);
        }
        Map.Entry<Long, Server> e = ring.ceilingEntry(hash(lockName));
        return (e != null ? e : ring.firstEntry()).getValue();
    }

    private static long hash(String s) {
        try {
            byte[] d = MessageDigest.getInstance("MD5").digest(s.getBytes(StandardCharsets.UTF_8));
            long h = 0;
            for (int i = 0; i < 8; i++) {
                h = (h << 8) | (d[i] & 0xff);
            }
            return h;
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    // ---- connection life

    private void checkTimeouts() {
        long now = System.nanoTime();
        long limit = options.connectTimeout().toNanos();
        for (Server s : servers) {
            MetaConnection c = s.connection;
            if (c == null) {
                continue;
            }
            // A connection whose replies callers read themselves leaves the I/O thread unarmed: arm it
            // once a tick, so that a server closing the connection is noticed while nothing is sent.
            c.arm();
            long oldest = c.oldestInflightNanos();
            if (oldest != Long.MIN_VALUE && now - oldest > limit) {
                log.warn(
                        "[client={}] memcached at {} did not answer for {} ms; closing the connection to reconnect",
                        NAME,
                        s.label,
                        TimeUnit.NANOSECONDS.toMillis(now - oldest));
                c.close(new IOException(
                        "no answer within " + options.connectTimeout().toMillis() + " ms"));
            }
        }
    }

    /** Called on the I/O thread when a connection closed. */
    private void onClosed(MetaConnection c) {
        if (closed.get()) {
            return;
        }
        for (Server s : servers) {
            if (s.connection == c) {
                s.downSinceNanos = options.ticker().read();
                s.connection = null;
                log.warn("[client={}] lost the connection to memcached at {}", NAME, s.label);
                // The engine's SUSPENDED puts every lease of the client at risk: only when no server is
                // left. One server's locks are lost through their renewals (MemcachedLockProtocol.renew).
                if (down.incrementAndGet() == servers.size()) {
                    emit(ConnectionState.SUSPENDED);
                }
                scheduleReconnect(s);
            }
        }
    }

    private void scheduleReconnect(Server s) {
        long base = Math.max(1, options.retryPolicy().baseSleep().toMillis());
        // At most a second between attempts: a restarted server's quarantine only starts once a client is back.
        long max =
                Math.min(1000, Math.max(base, options.retryPolicy().maxSleep().toMillis()));
        long delay = Math.min(max, base << Math.min(20, s.reconnectAttempt++));
        try {
            timer.schedule(() -> connector.execute(() -> reconnect(s)), delay, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            // closing
        }
    }

    private void reconnect(Server s) {
        if (closed.get()) {
            return;
        }
        try {
            s.connect();
        } catch (IOException | RuntimeException e) {
            log.debug("[client={}] reconnect to {} failed: {}", NAME, s.label, e.toString());
            s.unreachable = true;
            scheduleReconnect(s);
            return;
        }
        MetaConnection opened = s.connection;
        if (closed.get()) {
            if (opened != null) {
                opened.close(null);
            }
            return;
        }
        s.reconnectAttempt = 0;
        log.info("[client={}] reconnected to memcached at {}", NAME, s.label);
        if (down.getAndDecrement() == servers.size()) {
            emit(ConnectionState.RECONNECTED);
        }
        protocol.kickAll();
    }

    private void emit(ConnectionState state) {
        try {
            timer.execute(() -> {
                log.debug("[client={}] connection {}", NAME, state);
                for (Consumer<ConnectionState> l : listeners) {
                    l.accept(state);
                }
            });
        } catch (RejectedExecutionException ignored) {
            // closing
        }
    }

    /** Schedules {@code task} on the timer (the poller) thread; null if closing. */
    @Nullable
    ScheduledFuture<?> schedule(Runnable task, long delayMs) {
        try {
            return timer.schedule(task, Math.max(0, delayMs), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            return null;
        }
    }

    boolean isClosed() {
        return closed.get();
    }

    List<Server> servers() {
        return servers;
    }

    // ---- LockBackend

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<Capability> capabilities() {
        return capabilities;
    }

    @Override
    public LockProtocol protocol() {
        return protocol;
    }

    @Override
    public void onConnectionState(Consumer<ConnectionState> listener) {
        listeners.add(listener);
    }

    @Override
    public Duration maxSuspension() {
        return options.leaseTime().dividedBy(3);
    }

    @Override
    public Optional<DataLossFence> dataLossFence() {
        return fences.current();
    }

    @Override
    public Optional<LockInspector> inspector() {
        return Optional.of(inspector);
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        protocol.close();
        ScheduledFuture<?> w = watchdog;
        if (w != null) {
            w.cancel(false);
        }
        ScheduledFuture<?> r = infoRefresh;
        if (r != null) {
            r.cancel(false);
        }
        // The info key goes with the client; a bounded wait, so that a dead server cannot hold up close.
        List<CompletableFuture<List<Reply>>> deletes = new ArrayList<>();
        for (Server s : servers) {
            deletes.add(s.send(List.of(Command.of("md " + infoKey(clientId)))));
        }
        long deadline = System.nanoTime() + options.connectTimeout().toNanos();
        for (CompletableFuture<List<Reply>> d : deletes) {
            try {
                d.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            } catch (java.util.concurrent.ExecutionException | TimeoutException e) {
                log.debug("[client={}] deleting the info key failed: {}", NAME, e.toString());
            }
        }
        for (Server s : servers) {
            MetaConnection c = s.connection;
            if (c != null) {
                c.close(null);
            }
        }
        timer.shutdownNow();
        connector.shutdownNow();
        loop.close();
    }

    @Override
    public String toString() {
        return "MemcachedBackend[" + uri + ", client " + clientId + "]";
    }
}
