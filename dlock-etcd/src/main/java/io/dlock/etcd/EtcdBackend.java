package io.dlock.etcd;

import io.dlock.Capability;
import io.dlock.LockBackendException;
import io.dlock.LockOptions;
import io.dlock.spi.ConnectionState;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockProtocol;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.ClientBuilder;
import io.etcd.jetcd.common.exception.ErrorCode;
import io.etcd.jetcd.common.exception.EtcdException;
import io.etcd.jetcd.options.GetOption;
import io.netty.handler.ssl.SslContextBuilder;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.temporal.ChronoUnit;
import java.util.EnumSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A jetcd connection to an etcd cluster, with this client's one etcd lease.
 *
 * <p>Concurrency: jetcd completes its futures on its own executor; the keep-alive runs on one
 * timer thread of ours. Lease changes happen under {@code this}; connection-state events are
 * delivered to the engine while that monitor is held, so that a LOST for one lease always reaches
 * the engine before any grant on the next lease exists.
 *
 * <p>Failure: a keep-alive that etcd answers with "lease not found" (revoked, or expired while this
 * client could not reach the cluster) makes the lease LOST at once. A keep-alive is sent on every
 * tick whether or not earlier ones were answered, and each one's reply is awaited for as long as it
 * can still extend the lease: until its send time plus the TTL, not one tick (so a round trip
 * longer than a tick, but well under the TTL, keeps the lease). The lease is valid until the
 * newest confirmed keep-alive's send time (read before sending) plus the TTL etcd reported: etcd
 * received that keep-alive after it was sent, so it keeps the lease at least that long, and the
 * engine declares grants lost before etcd can expire them. A lease with no confirmation left is
 * LOST on the next tick. Once a lease is lost, the next acquisition grants a new one.
 *
 * <p>Invariants: every entry this client creates is attached to its current lease; a lease once
 * lost is never used again.
 */
final class EtcdBackend implements LockBackend {
    private static final Logger log = LoggerFactory.getLogger(EtcdBackend.class);
    static final String NAME = "etcd";

    final EtcdUri uri;
    /** The namespace's data-loss fences this client ran into, for messages and health. */
    final io.dlock.spi.DataLossFences fences = new io.dlock.spi.DataLossFences(NAME, "namespaces");

    final LockOptions options;
    final Client client;
    /** Whether {@link #client} is ours to close. */
    private final boolean ownsClient;

    final ScheduledThreadPoolExecutor timer;
    final Duration requestTimeout;
    private final EtcdLockProtocol protocol;
    private final EtcdInspector inspector;
    private final Set<Capability> capabilities;
    private final Duration maxSuspension;
    private final List<Consumer<ConnectionState>> listeners = new CopyOnWriteArrayList<>();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final long ttlSeconds;
    private final long delayTtlSeconds;
    private final long keepAliveNanos;

    /** The current lease, or null when the next acquisition must grant one. Guarded by this. */
    private @Nullable EtcdLease current;
    /**
     * Leases not known lost, by id: the current one and, with renewal off, older ones whose grants
     * run out on their own.
     */
    private final java.util.Map<Long, EtcdLease> live = new java.util.concurrent.ConcurrentHashMap<>();
    /** A grant of a new lease in flight, or null. Guarded by this. */
    private @Nullable CompletableFuture<EtcdLease> granting;

    private volatile @Nullable ScheduledFuture<?> keepAliveTask;

    /**
     * Requests in flight, each with its deadline, in the order they were sent; {@link #sweep} fails
     * those past it. Instead of {@code orTimeout}, whose task on the JDK's delay scheduler woke that
     * scheduler's thread for every request (twice per acquire+release, on two shared cores).
     */
    private final ConcurrentLinkedQueue<InFlight> inFlight = new ConcurrentLinkedQueue<>();

    private final long requestTimeoutNanos;

    /** The key checks of a lease not sent yet, by lease id; renewals join them. */
    private final Map<Long, KeyChecks> keyChecks = new ConcurrentHashMap<>();

    /**
     * How many reads one key-check transaction carries: etcd's default {@code --max-txn-ops}, halved
     * for good when a server refuses that many.
     */
    private final java.util.concurrent.atomic.AtomicInteger checksPerTxn =
            new java.util.concurrent.atomic.AtomicInteger(DEFAULT_MAX_TXN_OPS);

    static final int DEFAULT_MAX_TXN_OPS = 128;

    /** How many key-check transactions of one lease are in flight at once. */
    static final int CHECK_TXNS_IN_FLIGHT = 4;

    /** The ticker reading of the last WARN about key checks that could not be made. */
    private final java.util.concurrent.atomic.AtomicLong uncheckedWarnedAt =
            new java.util.concurrent.atomic.AtomicLong();

    /** The largest batch of key checks sent at once and how long it took, for tests. */
    private volatile int largestKeyCheck;

    private volatile long largestKeyCheckNanos;

    /** What a renewal's key check found. */
    enum KeyState {
        /** The key is there, on the lease, in the generation of the grant. */
        HELD,
        /** The key is gone, or another generation or lease has it. */
        GONE,
        /** etcd refused the check for a reason that asking again will not change (logged at WARN). */
        UNCHECKED
    }

    /** One renewal's question: is {@code key} still there at {@code createRevision}? */
    private record KeyCheck(ByteSequence key, long createRevision, CompletableFuture<KeyState> result) {}

    /** The key checks of one lease gathered for one send; sealed once it is being sent. */
    private static final class KeyChecks {
        /** Guarded by this. */
        private final List<KeyCheck> checks = new java.util.ArrayList<>();
        /** Guarded by this. */
        private boolean sealed;

        synchronized boolean add(KeyCheck c) {
            if (sealed) {
                return false;
            }
            checks.add(c);
            return true;
        }

        synchronized List<KeyCheck> seal() {
            sealed = true;
            return checks;
        }
    }

    private record InFlight(CompletableFuture<?> request, long deadline) {}

    /** One etcd lease of this client, with the lock-delay lease that goes with it (0 without). */
    static final class EtcdLease {
        final long id;
        final long delayId;
        final long ttlNanos;
        /** Ticker reading until which etcd is known to keep the lease: last confirmed send + TTL. */
        volatile long confirmedUntil;

        volatile boolean alive = true;

        EtcdLease(long id, long delayId, long ttlNanos, long confirmedUntil) {
            this.id = id;
            this.delayId = delayId;
            this.ttlNanos = ttlNanos;
            this.confirmedUntil = confirmedUntil;
        }

        @Override
        public String toString() {
            return "lease " + Long.toHexString(id);
        }
    }

    private EtcdBackend(EtcdUri uri, Client client, boolean ownsClient) {
        this.uri = uri;
        this.options = uri.options();
        this.client = client;
        this.ownsClient = ownsClient;
        this.requestTimeout = options.connectTimeout();
        this.requestTimeoutNanos = requestTimeout.toNanos();
        this.ttlSeconds = uri.ttlSeconds();
        // At most a second apart, so that a lease revoked behind dlock's back is noticed within one;
        // and a sixth of the TTL for short leases: the engine renews every third of the lease time and
        // takes the lease's validity as of each renewal, which lags the newest send time by up to a
        // round trip plus a tick, so with round trips up to a third of the TTL a grant keeps a margin
        // above the engine's loss threshold (a quarter left none at 2 s and 600 ms).
        this.keepAliveNanos = Math.min(TimeUnit.SECONDS.toNanos(1), TimeUnit.SECONDS.toNanos(ttlSeconds) / 6);
        // The lock-delay lease outlives the main one by the delay, plus a keep-alive period in case
        // its last keep-alive was one tick older than the main lease's.
        long delayMs = uri.lockDelay().toMillis();
        this.delayTtlSeconds = delayMs == 0
                ? 0
                : ttlSeconds + (delayMs + 999) / 1000 + (TimeUnit.NANOSECONDS.toMillis(keepAliveNanos) + 999) / 1000;
        this.maxSuspension = Duration.ofSeconds(ttlSeconds).dividedBy(2);
        this.timer = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "dlock-etcd-timer");
            t.setDaemon(true);
            return t;
        });
        timer.setRemoveOnCancelPolicy(true);
        EnumSet<Capability> caps = EnumSet.of(
                Capability.EXCLUSIVE,
                Capability.FAIR,
                Capability.FENCING_TOKENS,
                Capability.READ_WRITE,
                Capability.SEMAPHORE,
                Capability.MULTI_LOCK,
                Capability.LOST_DETECTION,
                Capability.CRASH_RELEASE,
                Capability.NO_HERD,
                Capability.RENEWAL);
        if (!uri.lockDelay().isZero()) {
            // Lock-delay holds for exclusive locks only: a lost reader or semaphore holder would
            // need a tombstone per entry that every later writer (or permit) waits out, which is
            // not built. The engine then refuses readWriteLock() and semaphore() with
            // UnsupportedOperationException naming the capability, rather than granting them
            // without the delay the client was configured with.
            caps.remove(Capability.READ_WRITE);
            caps.remove(Capability.SEMAPHORE);
        }
        this.capabilities = Set.copyOf(caps);
        this.protocol = new EtcdLockProtocol(this);
        this.inspector = new EtcdInspector(this);
    }

    /**
     * Connects to the cluster of {@code uri}, checks that it answers (and accepts the credentials),
     * and grants this client's first lease.
     *
     * <p>Blocking: up to about twice the connect timeout. On failure: throws {@link
     * LockBackendException} naming the members and the reason, with nothing left open.
     */
    /** jetcd's defaults for the retry back-off: 500 ms first, 2.5 s at most. */
    private static final long RETRY_DELAY_MICROS = 500_000;

    private static final long RETRY_MAX_DELAY_MICROS = 2_500_000;

    /** The first retry delay: jetcd's 500 ms, or a quarter of a connect timeout shorter than 2 s. */
    static long retryDelayMicros(Duration connectTimeout) {
        long micros = TimeUnit.NANOSECONDS.toMicros(connectTimeout.toNanos());
        return Math.max(1, Math.min(RETRY_DELAY_MICROS, micros / 4));
    }

    static EtcdBackend connect(EtcdUri uri) {
        Client client;
        try {
            ClientBuilder b = Client.builder()
                    .endpoints(uri.endpoints().toArray(new java.net.URI[0]))
                    .connectTimeout(uri.options().connectTimeout())
                    // jetcd's retry policy needs its first delay (500 ms by default) shorter than its
                    // longest duration: a quarter of a short connect timeout, in microseconds.
                    .retryChronoUnit(ChronoUnit.MICROS)
                    .retryDelay(retryDelayMicros(uri.options().connectTimeout()))
                    .retryMaxDelay(RETRY_MAX_DELAY_MICROS)
                    .retryMaxDuration(uri.options().connectTimeout())
                    .keepaliveTime(Duration.ofSeconds(10))
                    .keepaliveTimeout(Duration.ofSeconds(5));
            String user = uri.user();
            if (user != null) {
                // EtcdUri refuses a user without a password.
                b.user(bytes(user)).password(bytes(java.util.Objects.requireNonNull(uri.password(), "password")));
            }
            if (uri.tls()) {
                File ca = uri.ca() == null ? null : uri.ca().toFile();
                b.sslContext((SslContextBuilder ssl) -> {
                    if (ca != null) {
                        ssl.trustManager(ca);
                    }
                });
                if (uri.authority() != null) {
                    b.authority(uri.authority());
                }
            }
            client = b.build();
        } catch (RuntimeException | javax.net.ssl.SSLException e) {
            throw new LockBackendException(null, NAME, "cannot set up a client for " + uri + ": " + e.getMessage(), e);
        }
        return start(new EtcdBackend(uri, client, true));
    }

    /**
     * Connects through an application's jetcd client, which dlock never closes.
     *
     * <p>Blocking: up to about twice the connect timeout. On failure: {@link LockBackendException};
     * the client is left as it was.
     */
    static EtcdBackend connect(Client external, EtcdUri uri) {
        return start(new EtcdBackend(uri, external, false));
    }

    private static EtcdBackend start(EtcdBackend backend) {
        long sweepNanos = Math.max(
                TimeUnit.MILLISECONDS.toNanos(10),
                Math.min(TimeUnit.MILLISECONDS.toNanos(100), backend.requestTimeoutNanos / 10));
        backend.timer.scheduleWithFixedDelay(backend::sweep, sweepNanos, sweepNanos, TimeUnit.NANOSECONDS);
        try {
            backend.await(backend.client
                    .getKVClient()
                    .get(
                            bytes(backend.uri.namespace() + "/"),
                            GetOption.builder().withCountOnly(true).build()));
            backend.await(backend.lease());
        } catch (RuntimeException e) {
            backend.close();
            String why = backend.uri.tls() ? tlsProblem(backend.uri) : null;
            throw new LockBackendException(
                    null,
                    NAME,
                    "cannot connect to " + backend.uri.hostList() + ": "
                            + (why != null ? why : describe(e, backend.uri)),
                    e);
        }
        if (!backend.options.renewal()) {
            return backend; // grants run out at the lease time; nothing keeps the lease alive
        }
        backend.keepAliveTask = backend.timer.scheduleWithFixedDelay(
                backend::keepAlive, backend.keepAliveNanos, backend.keepAliveNanos, TimeUnit.NANOSECONDS);
        log.debug("[client={}] connected to {}", NAME, backend.uri);
        return backend;
    }

    private <T> T await(CompletableFuture<T> future) {
        try {
            return future.get(requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while connecting", e);
        } catch (ExecutionException e) {
            throw new CompletionException(e.getCause());
        } catch (TimeoutException e) {
            throw new CompletionException(
                    new TimeoutException("no answer within " + requestTimeout + " (is etcd running there?)"));
        }
    }

    /**
     * Fails {@code request} with a {@link TimeoutException} if it has not completed within the
     * request timeout (give or take one sweep period). Never blocks.
     */
    <T> CompletableFuture<T> bounded(CompletableFuture<T> request) {
        if (!request.isDone()) {
            inFlight.add(new InFlight(request, now() + requestTimeoutNanos));
        }
        return request;
    }

    /** One tick of the timer: drops answered requests and fails those past their deadline. */
    private void sweep() {
        long now = now();
        for (Iterator<InFlight> it = inFlight.iterator(); it.hasNext(); ) {
            InFlight f = it.next();
            if (f.request().isDone()) {
                it.remove();
            } else if (now - f.deadline() >= 0) {
                it.remove();
                f.request().completeExceptionally(new TimeoutException("no answer from etcd within " + requestTimeout));
            }
        }
    }

    /**
     * Whether {@code key} is still on the server, attached to {@code lease}, in the generation
     * created at {@code createRevision}. The checks that arrive within a few milliseconds (one
     * renewal tick's) go together, as transactions of keys-only reads of at most {@link
     * #DEFAULT_MAX_TXN_OPS} keys each, a few at a time: each reply stays small however many locks the
     * client holds (one {@code LeaseTimeToLive} listing every attached key went past gRPC's 4 MiB
     * reply limit at about 18,000 keys of 200-character names, and every renewal failed).
     *
     * <p>Never blocks. Fails with {@link LockBackendException} when etcd does not answer or answers
     * with an error that may pass (the renewal is tried again). An error that will not pass (etcd
     * refuses the request itself) completes with {@link KeyState#UNCHECKED} and is logged at WARN
     * with its cause: the grant stays as valid as its lease's keep-alive says, and only a key
     * deleted from outside goes unnoticed until a check succeeds again.
     */
    CompletableFuture<KeyState> checkKey(EtcdLease lease, ByteSequence key, long createRevision) {
        KeyCheck check = new KeyCheck(key, createRevision, new CompletableFuture<>());
        while (true) {
            boolean[] created = {false};
            KeyChecks batch = keyChecks.computeIfAbsent(lease.id, id -> {
                created[0] = true;
                return new KeyChecks();
            });
            if (!batch.add(check)) {
                keyChecks.remove(lease.id, batch); // being sent: start the next one
                continue;
            }
            if (created[0] && schedule(() -> sendKeyChecks(lease, batch), 5) == null) {
                keyChecks.remove(lease.id, batch);
                for (KeyCheck c : batch.seal()) {
                    c.result().completeExceptionally(new LockBackendException(null, NAME, "client is closed", null));
                }
            }
            return check.result();
        }
    }

    /** Never throws (a timer task): every check ends completed. */
    private void sendKeyChecks(EtcdLease lease, KeyChecks batch) {
        keyChecks.remove(lease.id, batch); // later renewals make the next batch
        List<KeyCheck> all = batch.seal();
        long started = now();
        java.util.concurrent.ConcurrentLinkedQueue<List<KeyCheck>> txns =
                new java.util.concurrent.ConcurrentLinkedQueue<>();
        int per = checksPerTxn.get();
        for (int i = 0; i < all.size(); i += per) {
            txns.add(all.subList(i, Math.min(all.size(), i + per)));
        }
        CompletableFuture.allOf(all.stream().map(KeyCheck::result).toArray(CompletableFuture<?>[]::new))
                .whenComplete((x, e) -> {
                    if (all.size() > largestKeyCheck) {
                        largestKeyCheck = all.size();
                        largestKeyCheckNanos = now() - started;
                    }
                });
        for (int i = 0; i < CHECK_TXNS_IN_FLIGHT; i++) {
            sendNextKeyCheck(lease, txns);
        }
    }

    private static final GetOption KEY_ONLY =
            GetOption.builder().withKeysOnly(true).build();

    /** Sends the next transaction of {@code txns}, and the one after once it is answered. */
    private void sendNextKeyCheck(EtcdLease lease, java.util.Queue<List<KeyCheck>> txns) {
        List<KeyCheck> checks = txns.poll();
        if (checks == null) {
            return;
        }
        CompletableFuture<io.etcd.jetcd.kv.TxnResponse> sent;
        try {
            sent = bounded(client.getKVClient()
                    .txn()
                    .Then(checks.stream()
                            .map(c -> io.etcd.jetcd.op.Op.get(c.key(), KEY_ONLY))
                            .toArray(io.etcd.jetcd.op.Op[]::new))
                    .commit());
        } catch (RuntimeException e) {
            sent = CompletableFuture.failedFuture(e);
        }
        sent.whenComplete((r, err) -> {
            try {
                if (err == null) {
                    for (int i = 0; i < checks.size(); i++) {
                        KeyCheck c = checks.get(i);
                        List<io.etcd.jetcd.KeyValue> kvs =
                                r.getGetResponses().get(i).getKvs();
                        boolean held = !kvs.isEmpty()
                                && kvs.get(0).getLease() == lease.id
                                && kvs.get(0).getCreateRevision() == c.createRevision();
                        c.result().complete(held ? KeyState.HELD : KeyState.GONE);
                    }
                } else if (String.valueOf(EtcdLockProtocol.unwrap(err).getMessage())
                                .contains("too many operations")
                        && checks.size() > 1) {
                    // A server with a lower --max-txn-ops: smaller transactions from now on.
                    int half = checks.size() / 2;
                    checksPerTxn.accumulateAndGet(half, Math::min);
                    log.info(
                            "[client={}] etcd refuses {} reads in one transaction; checking {} keys per transaction",
                            NAME,
                            checks.size(),
                            half);
                    txns.add(checks.subList(0, half));
                    txns.add(checks.subList(half, checks.size()));
                    sendNextKeyCheck(lease, txns); // this one's place, plus one for the extra half
                } else if (isTransient(err)) {
                    LockBackendException failure =
                            EtcdLockProtocol.failure(null, "checking " + checks.size() + " keys of " + lease, err);
                    checks.forEach(c -> c.result().completeExceptionally(failure));
                } else {
                    long now = now();
                    long last = uncheckedWarnedAt.get();
                    if ((last == 0 || now - last > TimeUnit.MINUTES.toNanos(1))
                            && uncheckedWarnedAt.compareAndSet(last, now == 0 ? 1 : now)) {
                        log.warn(
                                "[client={}] etcd refuses the renewal's check of {} keys of {}; their grants stay"
                                        + " valid while the lease is kept alive, but a key deleted from outside goes"
                                        + " unnoticed until a check succeeds (logged at most once a minute)",
                                NAME,
                                checks.size(),
                                lease,
                                EtcdLockProtocol.unwrap(err));
                    }
                    checks.forEach(c -> c.result().complete(KeyState.UNCHECKED));
                }
            } catch (RuntimeException e) {
                checks.forEach(c -> c.result().completeExceptionally(e));
            } finally {
                sendNextKeyCheck(lease, txns);
            }
        });
    }

    /**
     * Whether a failed request may succeed if sent again: no answer, or etcd unavailable, busy or
     * between leaders. An error etcd gives for the request itself (too large, invalid, not
     * permitted) comes back however often it is sent.
     */
    static boolean isTransient(Throwable err) {
        for (Throwable t = err; t != null; t = t.getCause()) {
            if (t instanceof TimeoutException) {
                return true;
            }
            if (t instanceof EtcdException ee) {
                return switch (ee.getErrorCode()) {
                    case INVALID_ARGUMENT,
                            RESOURCE_EXHAUSTED,
                            PERMISSION_DENIED,
                            UNAUTHENTICATED,
                            FAILED_PRECONDITION,
                            OUT_OF_RANGE,
                            UNIMPLEMENTED -> false;
                    default -> true;
                };
            }
        }
        return true;
    }

    /** The largest batch of key checks sent at once, for tests. */
    int largestKeyCheck() {
        return largestKeyCheck;
    }

    /** How long {@link #largestKeyCheck()}'s batch took until every answer was in, for tests. */
    long largestKeyCheckMillis() {
        return TimeUnit.NANOSECONDS.toMillis(largestKeyCheckNanos);
    }

    /**
     * Why TLS to the first member fails, or null if a handshake there succeeds (or cannot be
     * tried): gRPC retries a failed handshake until the connect timeout and then reports only
     * that, so a refused connect over {@code etcds://} shakes hands once more with the JDK's TLS,
     * trusting what the client trusts, to say so.
     */
    static @Nullable String tlsProblem(EtcdUri uri) {
        if (uri.endpoints().isEmpty()) {
            return null;
        }
        java.net.URI first = uri.endpoints().get(0);
        try {
            javax.net.ssl.TrustManagerFactory tmf = javax.net.ssl.TrustManagerFactory.getInstance(
                    javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
            if (uri.ca() != null) {
                java.security.KeyStore store =
                        java.security.KeyStore.getInstance(java.security.KeyStore.getDefaultType());
                store.load(null, null);
                try (java.io.InputStream in = java.nio.file.Files.newInputStream(uri.ca())) {
                    int i = 0;
                    for (java.security.cert.Certificate c : java.security.cert.CertificateFactory.getInstance("X.509")
                            .generateCertificates(in)) {
                        store.setCertificateEntry("ca" + i++, c);
                    }
                }
                tmf.init(store);
            } else {
                tmf.init((java.security.KeyStore) null);
            }
            javax.net.ssl.SSLContext context = javax.net.ssl.SSLContext.getInstance("TLS");
            context.init(null, tmf.getTrustManagers(), null);
            int timeout = (int)
                    Math.min(5000, Math.max(500, uri.options().connectTimeout().toMillis()));
            try (java.net.Socket raw = new java.net.Socket()) {
                raw.connect(new java.net.InetSocketAddress(first.getHost(), first.getPort()), timeout);
                raw.setSoTimeout(timeout);
                String host = uri.authority() != null ? uri.authority() : first.getHost();
                try (javax.net.ssl.SSLSocket tls = (javax.net.ssl.SSLSocket)
                        context.getSocketFactory().createSocket(raw, host, first.getPort(), false)) {
                    javax.net.ssl.SSLParameters params = tls.getSSLParameters();
                    params.setEndpointIdentificationAlgorithm("HTTPS");
                    tls.setSSLParameters(params);
                    tls.startHandshake();
                }
            }
            return null;
        } catch (javax.net.ssl.SSLException e) {
            return "TLS handshake with " + first.getHost() + ":" + first.getPort() + " failed (" + e.getMessage()
                    + "); etcds:// needs the CA that signed the servers' certificates: "
                    + (uri.ca() == null ? "add ?ca=/path/to/ca.pem" : "is " + uri.ca() + " that CA? (?ca=...)");
        } catch (java.io.IOException | java.security.GeneralSecurityException | RuntimeException e) {
            return null; // not a TLS problem we can name: the ordinary description stands
        }
    }

    /** The reason a connect failed, from the cause chain, without the password. */
    static String describe(Throwable e, EtcdUri uri) {
        StringBuilder sb = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            String m = String.valueOf(t.getMessage());
            if (m.contains("authentication failed") || m.contains("invalid user ID or password")) {
                return "authentication refused" + (uri.user() == null ? "" : " for user '" + uri.user() + "'") + " ("
                        + m + ")";
            }
            if (m.contains("user name is empty") || m.contains("user name not found")) {
                return "authentication required: etcd has auth enabled; give user:password@ in the URI (" + m + ")";
            }
            if (m.contains("permission denied")) {
                return "permission denied (" + m + "): dlock's user needs read-write on the prefix '" + uri.namespace()
                        + "/' and lease permission";
            }
            if (t instanceof javax.net.ssl.SSLException) {
                return "TLS handshake failed (" + m + "); etcds:// needs the servers' CA (?ca=/path/to/ca.pem)";
            }
            if (t instanceof CompletionException || t instanceof ExecutionException) {
                continue;
            }
            if (sb.length() > 0) {
                sb.append(": ");
            }
            sb.append(t.getClass().getSimpleName()).append(' ').append(m);
        }
        return sb.toString();
    }

    static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    static String string(ByteSequence b) {
        return b.toString(StandardCharsets.UTF_8);
    }

    /** The options' ticker: grants' validity is compared with it by the engine. */
    long now() {
        return options.ticker().read();
    }

    // ---- the lease

    /** The current lease, granting one if there is none. Never blocks. */
    synchronized CompletableFuture<EtcdLease> lease() {
        if (closed.get()) {
            return CompletableFuture.failedFuture(new LockBackendException(null, NAME, "client is closed", null));
        }
        long now = now();
        // With renewal off nobody keeps a lease alive: each serves new grants for half its TTL.
        if (current != null
                && current.alive
                && (options.renewal() || current.confirmedUntil - now > current.ttlNanos / 2)) {
            return CompletableFuture.completedFuture(current);
        }
        live.values().removeIf(l -> now - l.confirmedUntil > 0);
        if (granting != null) {
            return granting;
        }
        long sentAt = now;
        CompletableFuture<Long> delay = delayTtlSeconds == 0
                ? CompletableFuture.completedFuture(0L)
                : client.getLeaseClient().grant(delayTtlSeconds).thenApply(r -> r.getID());
        CompletableFuture<EtcdLease> g = client.getLeaseClient()
                .grant(ttlSeconds)
                .thenCombine(
                        delay,
                        (r, d) -> new EtcdLease(
                                r.getID(),
                                d,
                                TimeUnit.SECONDS.toNanos(r.getTTL()),
                                sentAt + TimeUnit.SECONDS.toNanos(r.getTTL())))
                .orTimeout(requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
        granting = g;
        g.whenComplete((l, err) -> {
            synchronized (this) {
                granting = null;
                if (err == null) {
                    if (closed.get()) {
                        revoke(l);
                    } else {
                        current = l;
                        live.put(l.id, l);
                        log.debug(
                                "[client={}] granted {} (ttl {} s)",
                                NAME,
                                l,
                                TimeUnit.NANOSECONDS.toSeconds(l.ttlNanos));
                    }
                }
            }
        });
        return g;
    }

    /** The lease, if it is the current one and alive; else null. */
    synchronized @Nullable EtcdLease currentLease() {
        return current != null && current.alive ? current : null;
    }

    /** The lease with this id if it is not known lost; else null. */
    @Nullable
    EtcdLease lease(long id) {
        EtcdLease l = live.get(id);
        return l != null && l.alive ? l : null;
    }

    /**
     * Keeps the current lease (and its lock-delay lease) alive; one tick of the timer. Never throws:
     * a periodic task that throws is never run again, and the lease would go unwatched.
     */
    private void keepAlive() {
        try {
            keepAliveOnce();
        } catch (RuntimeException e) {
            log.warn("[client={}] keep-alive tick failed", NAME, e);
        }
    }

    private void keepAliveOnce() {
        EtcdLease l = currentLease();
        if (l == null || closed.get()) {
            return;
        }
        long sentAt = now(); // before sending: etcd receives the keep-alive later, so keeps the lease longer
        if (sentAt - l.confirmedUntil > 0) {
            lost(
                    l,
                    "etcd lease " + Long.toHexString(l.id) + " ran out: no keep-alive sent in the last "
                            + TimeUnit.NANOSECONDS.toMillis(l.ttlNanos) + " ms was answered in time",
                    null);
            return;
        }
        CompletableFuture<Void> delay = l.delayId == 0
                ? CompletableFuture.completedFuture(null)
                : client.getLeaseClient().keepAliveOnce(l.delayId).thenApply(r -> null);
        client.getLeaseClient()
                .keepAliveOnce(l.id)
                .thenCombine(delay, (r, x) -> r)
                // Awaited while its answer can still extend the lease: past its send time + TTL it
                // confirms nothing that is not over. Not one tick: a reply later than that is not lost.
                .orTimeout(l.ttlNanos, TimeUnit.NANOSECONDS)
                .whenComplete((r, err) -> {
                    if (err == null) {
                        // Validity counts from the send, never from this reply's arrival; a reply
                        // that overtook a later one's never moves it back.
                        long until = sentAt + TimeUnit.SECONDS.toNanos(r.getTTL());
                        if (until - l.confirmedUntil > 0) {
                            l.confirmedUntil = until;
                        }
                    } else if (isLeaseGone(err)) {
                        lost(
                                l,
                                "etcd lease " + Long.toHexString(l.id) + " is gone on the server (revoked or expired)",
                                err);
                    } else {
                        log.debug("[client={}] keep-alive of {} failed: {}", NAME, l, err.toString());
                    }
                });
    }

    static boolean isLeaseGone(Throwable err) {
        for (Throwable t = err; t != null; t = t.getCause()) {
            if (t instanceof EtcdException ee && ee.getErrorCode() == ErrorCode.NOT_FOUND
                    || String.valueOf(t.getMessage()).contains("requested lease not found")) {
                return true;
            }
        }
        return false;
    }

    /**
     * Marks {@code l} lost: the engine hears LOST (and loses every grant) before the next lease can
     * be granted, waiters on it are told their entries vanished, and the lease is revoked so that
     * its keys do not block others until etcd expires it. Idempotent.
     */
    void lost(EtcdLease l, String reason, @Nullable Throwable cause) {
        synchronized (this) {
            if (!l.alive) {
                return;
            }
            l.alive = false;
            live.remove(l.id);
            if (current == l) {
                current = null;
            }
            log.warn("[client={}] {}; every lock held through it is lost", NAME, reason);
            for (Consumer<ConnectionState> listener : listeners) {
                try {
                    listener.accept(ConnectionState.LOST);
                } catch (RuntimeException e) {
                    log.warn("[client={}] connection listener failed", NAME, e);
                }
            }
        }
        protocol.leaseLost(l, reason);
        // Only the main lease: the lock-delay lease must run out on its own, keeping the delay.
        try {
            client.getLeaseClient().revoke(l.id).whenComplete((r, e) -> {});
        } catch (RuntimeException e) {
            // a closing jetcd client refuses: the lease then runs out on the server
            log.debug("[client={}] revoking lost {}: {}", NAME, l, e.toString());
        }
    }

    private void revoke(EtcdLease l) {
        client.getLeaseClient().revoke(l.id).whenComplete((r, e) -> {});
        if (l.delayId != 0) {
            client.getLeaseClient().revoke(l.delayId).whenComplete((r, e) -> {});
        }
    }

    /** Schedules {@code task} on the timer thread; returns null if closing. */
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
    public java.util.Optional<io.dlock.spi.DataLossFence> dataLossFence() {
        return fences.current();
    }

    @Override
    public java.util.Optional<io.dlock.spi.LockInspector> inspector() {
        return java.util.Optional.of(inspector);
    }

    @Override
    public void onConnectionState(Consumer<ConnectionState> listener) {
        listeners.add(listener);
    }

    /**
     * Registers the engine's listener for grants of this client deleted by someone else while its
     * lease lives: the client's shared watch on the namespace's deletes, started once a grant has
     * been held for about 200 ms, delivers the delete (see {@link EtcdLockProtocol}'s forced
     * releases). Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail; a
     * delete the watch cannot deliver (its connection is down) is found at the grant's next
     * renewal.
     */
    @Override
    public void onForcedRelease(Consumer<io.dlock.spi.QueueEntry> listener) {
        protocol.forcedListener = listener;
    }

    @Override
    public Duration maxSuspension() {
        return maxSuspension;
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        ScheduledFuture<?> task = keepAliveTask;
        if (task != null) {
            task.cancel(false);
        }
        boolean keepDelayLeases = protocol.holdsTombstones();
        protocol.close();
        for (KeyChecks batch : keyChecks.values()) {
            for (KeyCheck c : batch.seal()) {
                c.result().completeExceptionally(new LockBackendException(null, NAME, "client closed", null));
            }
        }
        List<EtcdLease> leases;
        synchronized (this) {
            current = null;
            leases = List.copyOf(live.values());
            live.clear();
        }
        try {
            // Revoking deletes every key still attached; the engine released its grants before. A lost
            // holder's tombstone waiting out its delay stays: its lock-delay lease runs out on its own.
            if (keepDelayLeases) {
                log.info(
                        "[client={}] closing with lost holders' lock-delay tombstones: they stay until their"
                                + " lock-delay lease runs out (at most {} s)",
                        NAME,
                        delayTtlSeconds);
            }
            List<CompletableFuture<?>> revokes = new java.util.ArrayList<>();
            for (EtcdLease l : leases) {
                revokes.add(client.getLeaseClient().revoke(l.id));
                if (l.delayId != 0 && !keepDelayLeases) {
                    revokes.add(client.getLeaseClient().revoke(l.delayId));
                }
            }
            CompletableFuture.allOf(revokes.toArray(new CompletableFuture<?>[0]))
                    .get(requestTimeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            log.debug("[client={}] revoking {} at close: {}", NAME, leases, e.toString());
        } finally {
            timer.shutdownNow();
            if (ownsClient) {
                client.close();
            }
        }
    }

    @Override
    public String toString() {
        return "EtcdBackend[" + uri + "]";
    }
}
