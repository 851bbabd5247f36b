package io.dlock.spring.boot.internal;

import io.dlock.Capability;
import io.dlock.DistributedLock;
import io.dlock.DistributedReadWriteLock;
import io.dlock.DistributedSemaphore;
import io.dlock.LeaderElection;
import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockClientProvider;
import io.dlock.LockInterruptedException;
import io.dlock.LockOptions;
import io.dlock.core.LockNames;
import io.dlock.spi.BackendUri;
import io.dlock.spi.LockBackendProvider;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.Collection;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import java.util.function.Consumer;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link LockClient} that connects in the background ({@code dlock.connect=lazy}): the
 * application starts while the backend is down, lock calls fail with {@link LockBackendException}
 * until the connection is made, then go to the real client. A malformed URI, an unknown scheme, a
 * missing backend module or a bad option is still refused at once by {@link #start}.
 *
 * <p>Concurrency: one daemon thread ({@code dlock-connect-<backend>}) calls {@link
 * LockClient#connect} until it succeeds, sleeping between attempts with an exponential backoff
 * (bounded), on a latch that {@link #close()} opens. The real client is published through a
 * volatile field before the state moves to {@link State#CONNECTED} by CAS, so a caller that reads
 * CONNECTED sees it. If {@link #close()} wins the race, the connector closes the client it just
 * made. Handles given out before the connection resolve the real handle at their first call after
 * it. Calls made while the first attempt still runs wait for its outcome (up to the connect
 * timeout), so that an application's first calls after a startup with a reachable backend succeed.
 *
 * <p>Failure: unreachable is retried for ever (one WARN for the first failure of a series, DEBUG
 * for the rest, INFO once connected); an {@link IllegalArgumentException} found only while
 * connecting (a backend-specific option value) is logged at ERROR and ends the attempts ({@link
 * State#FAILED}); calls then fail with {@link LockBackendException} naming it.
 *
 * <p>Invariants: after {@link #close()} returns, no connector thread runs: close wakes it from its
 * backoff and waits for an attempt in progress to end (within the connect timeout); a client that
 * attempt made after the close is closed by the connector itself.
 *
 * <p>Thread-safety: safe from any thread.
 */
public final class LazyLockClient implements LockClient {
    private static final Logger log = LoggerFactory.getLogger(LazyLockClient.class);

    /** The lazy client's lifecycle. */
    public enum State {
        /** Not connected yet; the background thread is trying. */
        CONNECTING,
        /** Connected; every call goes to the real client (which reconnects on its own). */
        CONNECTED,
        /** The backend refused the configuration while connecting; no more attempts. */
        FAILED,
        /** Closed; terminal. */
        CLOSED
    }

    private static final Map<State, Set<State>> EDGES = new EnumMap<>(Map.of(
            State.CONNECTING, EnumSet.of(State.CONNECTED, State.FAILED, State.CLOSED),
            State.CONNECTED, EnumSet.of(State.CLOSED),
            State.FAILED, EnumSet.of(State.CLOSED),
            State.CLOSED, EnumSet.noneOf(State.class)));

    private final String uri;
    private final String redactedUri;
    private final String backend;
    private final LockOptions options;
    private final Duration baseBackoff;
    private final Duration maxBackoff;
    private final AtomicReference<State> state = new AtomicReference<>(State.CONNECTING);
    private final AtomicInteger attempts = new AtomicInteger();
    private final CountDownLatch closing = new CountDownLatch(1);
    /** Open once the first attempt has an outcome (or the client closed). */
    private final CountDownLatch firstAttempt = new CountDownLatch(1);

    private final Thread connector;
    private volatile @Nullable LockClient delegate;
    private volatile @Nullable Throwable lastError;

    private LazyLockClient(String uri, LockOptions options, Duration baseBackoff, Duration maxBackoff) {
        this.uri = uri;
        this.redactedUri = UriRedaction.redact(uri);
        this.backend = backendOf(uri);
        this.options = options;
        this.baseBackoff = baseBackoff;
        this.maxBackoff = maxBackoff;
        this.connector = new Thread(this::connectLoop, "dlock-connect-" + backend);
        this.connector.setDaemon(true);
    }

    /**
     * Checks the URI and options without a network call, then starts connecting in the background.
     *
     * <p>Blocking: never (no network call; the first attempt runs on the connector thread).
     * Thread-safety: safe from any thread. On failure: throws, and no thread is started.
     *
     * @param uri the backend URI
     * @param options the client's options; query parameters in the URI override them
     * @param baseBackoff the first pause between failed attempts, positive
     * @param maxBackoff the longest pause between failed attempts, at least {@code baseBackoff}
     * @return the client, {@link State#CONNECTING} (or already {@link State#CONNECTED})
     * @throws IllegalArgumentException if the URI is malformed, its scheme unknown, its backend module
     *     missing from the class path, a query parameter unknown or malformed, or a backoff invalid
     */
    public static LazyLockClient start(String uri, LockOptions options, Duration baseBackoff, Duration maxBackoff) {
        Objects.requireNonNull(uri, "uri");
        Objects.requireNonNull(options, "options");
        if (baseBackoff.isNegative() || baseBackoff.isZero() || maxBackoff.compareTo(baseBackoff) < 0) {
            throw new IllegalArgumentException(
                    "connect backoff must be positive and max >= base: " + baseBackoff + ", " + maxBackoff);
        }
        checkConfiguration(uri, options);
        LazyLockClient client = new LazyLockClient(uri, options, baseBackoff, maxBackoff);
        client.connector.start();
        return client;
    }

    /**
     * What {@link LockClient#connect} would refuse before connecting, refused now: the URI's syntax
     * and scheme, the backend module, and the common and backend-specific parameter names and values
     * that {@link BackendUri} parses.
     */
    private static void checkConfiguration(String uri, LockOptions options) {
        URI parsed;
        try {
            parsed = new URI(uri);
        } catch (URISyntaxException e) {
            refuseThroughConnect(uri, options);
            return;
        }
        for (LockClientProvider provider : ServiceLoader.load(LockClientProvider.class)) {
            if (provider.supports(parsed)) {
                if (provider instanceof LockBackendProvider p) {
                    BackendUri.parse(parsed, options, p.parameters());
                }
                return;
            }
        }
        refuseThroughConnect(uri, options);
    }

    /** No provider takes the URI: connect refuses it without a network call, with core's message. */
    private static void refuseThroughConnect(String uri, LockOptions options) {
        LockClient.connect(uri, options).close(); // throws IllegalArgumentException
        throw new IllegalStateException("no dlock backend takes " + UriRedaction.redact(uri));
    }

    /** The engine's backend name as the URI's scheme gives it ({@code redis} for every Redis form). */
    static String backendOf(String uri) {
        int colon = uri.indexOf(':');
        String scheme = colon < 0 ? uri : uri.substring(0, colon).toLowerCase(Locale.ROOT);
        return scheme.startsWith("redis") ? "redis" : scheme.isEmpty() ? "unknown" : scheme;
    }

    private void connectLoop() {
        long delay = baseBackoff.toNanos();
        boolean warned = false;
        while (state.get() == State.CONNECTING) {
            int attempt = attempts.incrementAndGet();
            LockClient c;
            try {
                c = LockClient.connect(uri, options);
            } catch (IllegalArgumentException e) {
                lastError = e;
                boolean failed = transition(State.CONNECTING, State.FAILED);
                firstAttempt.countDown();
                if (failed) {
                    log.error("[client={}] {} refused: {}; not retrying", backend, redactedUri, e.getMessage());
                }
                return;
            } catch (RuntimeException e) {
                lastError = e;
                firstAttempt.countDown();
                if (state.get() != State.CONNECTING) {
                    return;
                }
                if (!warned) {
                    warned = true;
                    log.warn(
                            "[client={}] cannot connect to {}: {}; lock calls fail until it is reachable, retrying"
                                    + " in the background every {} at most",
                            backend,
                            redactedUri,
                            e.toString(),
                            maxBackoff);
                } else {
                    log.debug("[client={}] attempt {} failed: {}", backend, attempt, e.toString());
                }
                try {
                    if (closing.await(delay, TimeUnit.NANOSECONDS)) {
                        return;
                    }
                } catch (InterruptedException ie) {
                    return; // nothing in the starter interrupts this thread; someone wants it gone
                }
                delay = Math.min(delay * 2, maxBackoff.toNanos());
                continue;
            }
            delegate = c;
            boolean connected = transition(State.CONNECTING, State.CONNECTED);
            firstAttempt.countDown();
            if (!connected) {
                delegate = null;
                c.close(); // closed while connecting
                return;
            }
            lastError = null;
            if (warned) {
                log.info("[client={}] connected to {} after {} attempts", backend, redactedUri, attempt);
            }
            joinWaitingElections(c);
        }
    }

    private boolean transition(State from, State to) {
        if (!Objects.requireNonNull(EDGES.get(from)).contains(to)) {
            throw new IllegalStateException("lock client " + redactedUri + ": " + from + " -> " + to);
        }
        return state.compareAndSet(from, to);
    }

    /**
     * The current state.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return where the client is in its lifecycle
     */
    public State state() {
        return Objects.requireNonNull(state.get(), "state");
    }

    /**
     * The error of the latest failed connection attempt, while not connected.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the error, or empty once connected or before the first attempt failed
     */
    public Optional<Throwable> lastError() {
        return state.get() == State.CONNECTED ? Optional.empty() : Optional.ofNullable(lastError);
    }

    /**
     * How many connection attempts were made.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the count, at least 1 once the connector ran
     */
    public int attempts() {
        return attempts.get();
    }

    /**
     * The backend's name ({@code redis}, {@code zookeeper}, {@code jdbc}, …).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the name the engine uses in metrics and exceptions
     */
    public String backend() {
        return backend;
    }

    /**
     * The URI without secrets, for logs and health details.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the redacted URI
     */
    public String redactedUri() {
        return redactedUri;
    }

    /**
     * Waits until the first connection attempt has an outcome, so that a call made just after the
     * startup does not fail while a reachable backend is still being connected to.
     *
     * <p>Blocking: up to {@code wait}, only while the first attempt runs. Thread-safety: safe from
     * any thread. On failure: returns false on timeout; an interrupt returns false with the flag set.
     *
     * @param wait the longest to wait
     * @return whether the first attempt has ended (connected or not)
     */
    public boolean awaitFirstAttempt(Duration wait) {
        try {
            return firstAttempt.await(wait.toNanos(), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * How long a call made during the first attempt waits for it. The attempt is several requests
     * (connect, handshake, the backend's setup), each bounded by connectTimeout, in a JVM that is
     * often still loading the client's classes; waiting for one connectTimeout only failed calls
     * that would have succeeded a moment later.
     */
    private Duration firstAttemptBudget() {
        return options.connectTimeout().multipliedBy(3);
    }

    private LockClient connected(@Nullable String lockName) {
        if (state.get() == State.CONNECTING) {
            try {
                firstAttempt.await(firstAttemptBudget().toNanos(), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                if (lockName != null) {
                    throw new LockInterruptedException(lockName, backend, e);
                }
            }
        }
        LockClient c = delegate;
        State s = state.get();
        if (s == State.CONNECTED && c != null) {
            return c;
        }
        if (s == State.CLOSED) {
            throw new IllegalStateException("LockClient[" + backend + "] is closed");
        }
        Throwable cause = lastError;
        String detail = s == State.FAILED
                ? redactedUri + " was refused while connecting; fix dlock.uri and restart"
                : s == State.CONNECTING && firstAttempt.getCount() > 0
                        ? "not connected to " + redactedUri
                                + " yet: the first connection attempt is still running after " + firstAttemptBudget()
                        : "not connected to " + redactedUri + " yet (connecting in the background, " + attempts.get()
                                + " attempts)" + (cause == null ? "" : ": " + cause);
        return throwBackend(lockName, detail, cause);
    }

    private LockClient throwBackend(@Nullable String lockName, String detail, @Nullable Throwable cause) {
        throw new LockBackendException(lockName, backend, detail, cause);
    }

    private void checkNotClosed() {
        if (state.get() == State.CLOSED) {
            throw new IllegalStateException("LockClient[" + backend + "] is closed");
        }
    }

    /**
     * The connected client, for diagnostics ({@link io.dlock.core.Diagnostics}) that need dlock's own
     * client rather than this wrapper.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the client once connected, else empty
     */
    public Optional<LockClient> connectedClient() {
        return Optional.ofNullable(ifConnected());
    }

    private @Nullable LockClient ifConnected() {
        return state.get() == State.CONNECTED ? delegate : null;
    }

    /**
     * Returns the lock; before the connection a handle whose calls fail with {@link
     * LockBackendException} until then.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws, nothing created.
     *
     * @param name the lock's name (rules of {@link LockClient#lock})
     * @return the handle
     * @throws IllegalArgumentException if the name is invalid
     * @throws IllegalStateException if the client is closed
     */
    @Override
    public DistributedLock lock(String name) {
        LockClient c = ifConnected();
        if (c != null) {
            return c.lock(name);
        }
        checkNotClosed();
        LockNames.validate(name);
        return new LazyLock(name, real -> real.lock(name));
    }

    /**
     * Returns the read-write lock; before the connection a pair of handles whose calls fail with
     * {@link LockBackendException} until then (a backend without {@link Capability#READ_WRITE}
     * throws {@link UnsupportedOperationException} at their first call after it).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws, nothing created.
     *
     * @param name the lock's name
     * @return the handle
     * @throws IllegalArgumentException if the name is invalid
     * @throws IllegalStateException if the client is closed
     */
    @Override
    public DistributedReadWriteLock readWriteLock(String name) {
        LockClient c = ifConnected();
        if (c != null) {
            return c.readWriteLock(name);
        }
        checkNotClosed();
        LockNames.validate(name);
        DistributedLock read =
                new LazyLock(name, real -> real.readWriteLock(name).readLock());
        DistributedLock write =
                new LazyLock(name, real -> real.readWriteLock(name).writeLock());
        return new DistributedReadWriteLock() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public DistributedLock readLock() {
                return read;
            }

            @Override
            public DistributedLock writeLock() {
                return write;
            }
        };
    }

    /**
     * Returns the semaphore; before the connection a handle whose calls fail with {@link
     * LockBackendException} until then.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws, nothing created.
     *
     * @param name the semaphore's name
     * @param permits the total number of permits, at least 1
     * @return the handle
     * @throws IllegalArgumentException if the name is invalid or {@code permits < 1}
     * @throws IllegalStateException if the client is closed
     */
    @Override
    public DistributedSemaphore semaphore(String name, int permits) {
        LockClient c = ifConnected();
        if (c != null) {
            return c.semaphore(name, permits);
        }
        checkNotClosed();
        LockNames.validate(name);
        if (permits < 1) {
            throw new IllegalArgumentException("permits must be at least 1: " + permits);
        }
        return new LazySemaphore(name, permits);
    }

    /**
     * Returns the multi-lock; before the connection a handle whose calls fail with {@link
     * LockBackendException} until then.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws, nothing created.
     *
     * @param names the locks' names, at least one, no duplicates
     * @return the handle
     * @throws IllegalArgumentException if {@code names} is empty, has duplicates or an invalid name
     * @throws IllegalStateException if the client is closed
     */
    @Override
    public DistributedLock multiLock(Collection<String> names) {
        LockClient c = ifConnected();
        if (c != null) {
            return c.multiLock(names);
        }
        checkNotClosed();
        if (names.isEmpty()) {
            throw new IllegalArgumentException("multiLock needs at least one lock name");
        }
        Set<String> seen = new HashSet<>();
        for (String n : names) {
            if (!seen.add(LockNames.validate(n))) {
                throw new IllegalArgumentException("multiLock names must be distinct; '" + n + "' appears twice");
            }
        }
        Collection<String> copy = java.util.List.copyOf(names);
        return new LazyLock(String.join(",", new TreeSet<>(seen)), real -> real.multiLock(copy));
    }

    /**
     * A leader election: the real client's once connected; before, a handle that keeps its
     * listeners and its {@code start()} and joins the real election as soon as the connection is
     * made (until then it leads nothing, and {@code currentLeader()} fails with {@link
     * LockBackendException}).
     *
     * <p>Blocking: while the first connection attempt runs, up to the connect timeout. Thread-safety:
     * safe from any thread. On failure: a bad name is an {@link IllegalArgumentException}; a closed
     * client an {@link IllegalStateException}; a configuration the backend refused a {@link
     * LockBackendException}.
     *
     * @param name the election's name
     * @return the election, not started
     */
    @Override
    public LeaderElection leaderElection(String name) {
        LockNames.validate(name);
        if (name.length() > LockNames.MAX_LENGTH - LockNames.ELECTION_PREFIX.length()) {
            throw new IllegalArgumentException("election name is " + name.length() + " characters long; at most "
                    + (LockNames.MAX_LENGTH - LockNames.ELECTION_PREFIX.length()) + " are allowed");
        }
        awaitFirstAttempt(firstAttemptBudget());
        LockClient c = ifConnected();
        if (c != null) {
            return c.leaderElection(name);
        }
        if (state.get() != State.CONNECTING) {
            return connected(name).leaderElection(name); // closed or refused: throws why
        }
        return new LazyElection(name);
    }

    /** Elections started before the connection, joined to the real client once it is made. */
    private final Set<LazyElection> waitingElections = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private void joinWaitingElections(LockClient c) {
        for (LazyElection e : waitingElections) {
            e.attach(c);
        }
    }

    /**
     * Runs {@code action} under the lock, on the real client.
     *
     * <p>Blocking: as {@link LockClient#withLock}. Thread-safety: safe from any thread. On failure:
     * as {@link LockClient#withLock}; before the connection {@link LockBackendException} and the
     * action does not run.
     *
     * @param name the lock's name
     * @param wait how long to wait for the lock
     * @param action the work to do under the lock
     * @param <T> the action's result type
     * @return what the action returned
     * @throws LockBackendException if not connected yet
     */
    @Override
    public <T> T withLock(String name, Duration wait, Callable<T> action) {
        LockClient c = ifConnected();
        if (c == null) {
            checkNotClosed();
            LockNames.validate(name);
            c = connected(name);
        }
        return c.withLock(name, wait, action);
    }

    /**
     * The real client's capabilities; empty before the connection (they are the backend's to say).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the capabilities, or an empty set while not connected
     */
    @Override
    public Set<Capability> capabilities() {
        LockClient c = ifConnected();
        return c == null ? Set.of() : c.capabilities();
    }

    /**
     * Stops the background connection attempts and closes the real client if there is one.
     *
     * <p>Blocking: until the real client is closed and the connector thread ended, which waits at
     * most the connect timeout plus one second for an attempt in progress. Thread-safety: safe from
     * any thread. On failure: never throws; closing again does nothing.
     */
    @Override
    public void close() {
        State prev = state.getAndSet(State.CLOSED);
        if (prev == State.CLOSED) {
            return;
        }
        closing.countDown(); // wakes the connector from its backoff
        firstAttempt.countDown();
        // No interrupt: a backend interrupted inside connect may skip part of its own cleanup
        // (dlock-redis then leaves its Lettuce threads running); the attempt is bounded anyway.
        LockClient c = delegate;
        if (prev == State.CONNECTED && c != null) {
            c.close();
        }
        if (Thread.currentThread() != connector) {
            try {
                connector.join(options.connectTimeout().plusSeconds(1).toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public String toString() {
        LockClient c = ifConnected();
        return c != null ? c.toString() : "LockClient[" + backend + ", " + state.get() + ", " + redactedUri + "]";
    }

    /** A lock handle made before the connection; resolves the real one at its first call after. */
    private final class LazyLock implements DistributedLock {
        private final String name;
        private final Function<LockClient, DistributedLock> resolver;
        private volatile @Nullable DistributedLock real;

        LazyLock(String name, Function<LockClient, DistributedLock> resolver) {
            this.name = name;
            this.resolver = resolver;
        }

        private DistributedLock real() {
            DistributedLock r = real;
            if (r == null) {
                r = resolver.apply(connected(name)); // same-name handles share their state: a race is harmless
                real = r;
            }
            return r;
        }

        @Override
        public String name() {
            DistributedLock r = real;
            return r != null ? r.name() : name;
        }

        @Override
        public Lease acquire() throws InterruptedException {
            return real().acquire();
        }

        @Override
        public Optional<Lease> tryAcquire(Duration wait) throws InterruptedException {
            checkWait(wait);
            return real().tryAcquire(wait);
        }

        @Override
        public CompletableFuture<Lease> acquireAsync(Duration wait) {
            checkWait(wait);
            DistributedLock r;
            try {
                r = real();
            } catch (LockBackendException e) {
                return CompletableFuture.failedFuture(e);
            }
            return r.acquireAsync(wait);
        }

        @Override
        public boolean isHeldByCurrentThread() {
            DistributedLock r = real;
            if (r == null && ifConnected() != null) {
                r = real();
            }
            return r != null && r.isHeldByCurrentThread();
        }

        @Override
        public Lock asJavaLock() {
            return new Lock() {
                @Override
                public void lock() {
                    real().asJavaLock().lock();
                }

                @Override
                public void lockInterruptibly() throws InterruptedException {
                    real().asJavaLock().lockInterruptibly();
                }

                @Override
                public boolean tryLock() {
                    return real().asJavaLock().tryLock();
                }

                @Override
                public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
                    return real().asJavaLock().tryLock(time, unit);
                }

                @Override
                public void unlock() {
                    if (real == null) {
                        throw new IllegalMonitorStateException("lock '" + name + "' is not held by this thread");
                    }
                    real().asJavaLock().unlock();
                }

                @Override
                public Condition newCondition() {
                    throw new UnsupportedOperationException("distributed locks have no conditions");
                }
            };
        }

        @Override
        public String toString() {
            return "DistributedLock[" + name + ", " + LazyLockClient.this + "]";
        }
    }

    private static void checkWait(Duration wait) {
        if (wait.isNegative()) {
            throw new IllegalArgumentException("wait must not be negative: " + wait);
        }
    }

    /** A semaphore handle made before the connection. */
    private final class LazySemaphore implements DistributedSemaphore {
        private final String name;
        private final int permits;
        private volatile @Nullable DistributedSemaphore real;

        LazySemaphore(String name, int permits) {
            this.name = name;
            this.permits = permits;
        }

        private DistributedSemaphore real() {
            DistributedSemaphore r = real;
            if (r == null) {
                r = connected(name).semaphore(name, permits);
                real = r;
            }
            return r;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public int permits() {
            return permits;
        }

        private void checkPermits(int n) {
            if (n < 1 || n > permits) {
                throw new IllegalArgumentException(
                        "semaphore '" + name + "': cannot take " + n + " permits; it has " + permits);
            }
        }

        @Override
        public Lease acquire(int n) throws InterruptedException {
            checkPermits(n);
            return real().acquire(n);
        }

        @Override
        public Optional<Lease> tryAcquire(int n, Duration wait) throws InterruptedException {
            checkPermits(n);
            checkWait(wait);
            return real().tryAcquire(n, wait);
        }

        @Override
        public CompletableFuture<Lease> acquireAsync(int n, Duration wait) {
            checkPermits(n);
            checkWait(wait);
            DistributedSemaphore r;
            try {
                r = real();
            } catch (LockBackendException e) {
                return CompletableFuture.failedFuture(e);
            }
            return r.acquireAsync(n, wait);
        }
    }

    /**
     * An election made before the connection: keeps its listeners and whether it was started, and
     * becomes the real client's election once connected. Concurrency: {@link #lock} guards the
     * fields; the real election is made and started under it, so a listener added or a close racing
     * the connection reaches it exactly once.
     */
    private final class LazyElection implements LeaderElection {
        private final String name;
        private final Object lock = new Object();
        private final java.util.List<Consumer<Lease>> elected = new java.util.ArrayList<>();
        private final java.util.List<Consumer<Lease>> revoked = new java.util.ArrayList<>();
        private boolean started;
        private boolean closed;
        private @Nullable LeaderElection real;

        LazyElection(String name) {
            this.name = name;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public LeaderElection onElected(Consumer<Lease> listener) {
            return add(listener, elected, true);
        }

        @Override
        public LeaderElection onRevoked(Consumer<Lease> listener) {
            return add(listener, revoked, false);
        }

        private LeaderElection add(@Nullable Consumer<Lease> listener, java.util.List<Consumer<Lease>> to, boolean e) {
            if (listener == null) {
                throw new IllegalArgumentException("election '" + name + "': listener must not be null");
            }
            synchronized (lock) {
                LeaderElection r = real;
                if (r == null) {
                    to.add(listener);
                } else if (e) {
                    r.onElected(listener);
                } else {
                    r.onRevoked(listener);
                }
            }
            return this;
        }

        @Override
        public LeaderElection start() {
            synchronized (lock) {
                if (closed) {
                    throw new IllegalStateException(
                            "election '" + name + "' on " + backend + " is closed; make a new one");
                }
                if (started) {
                    return this;
                }
                started = true;
            }
            waitingElections.add(this);
            LockClient c = ifConnected();
            if (c != null) {
                attach(c); // connected just now: the connector may have looked before we were added
            }
            return this;
        }

        void attach(LockClient c) {
            synchronized (lock) {
                if (closed || !started || real != null) {
                    return;
                }
                LeaderElection r = c.leaderElection(name);
                elected.forEach(r::onElected);
                revoked.forEach(r::onRevoked);
                real = r;
                r.start();
                lock.notifyAll();
            }
            waitingElections.remove(this);
        }

        private @Nullable LeaderElection real() {
            synchronized (lock) {
                return real;
            }
        }

        @Override
        public Optional<Lease> leadership() {
            LeaderElection r = real();
            return r == null ? Optional.empty() : r.leadership();
        }

        @Override
        public Optional<Lease> awaitLeadership(Duration wait) throws InterruptedException {
            if (wait == null || wait.isNegative()) {
                throw new IllegalArgumentException(
                        "election '" + name + "': wait must not be null or negative: " + wait);
            }
            long deadline = System.nanoTime() + Math.min(wait.toNanos(), Long.MAX_VALUE / 4);
            LeaderElection r;
            synchronized (lock) {
                while ((r = real) == null && !closed) {
                    long left = deadline - System.nanoTime();
                    if (left <= 0) {
                        return Optional.empty();
                    }
                    TimeUnit.NANOSECONDS.timedWait(lock, left);
                }
            }
            return r == null
                    ? Optional.empty()
                    : r.awaitLeadership(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
        }

        @Override
        public Optional<io.dlock.Leader> currentLeader() {
            LeaderElection r = real();
            return r != null
                    ? r.currentLeader()
                    : connected(name).leaderElection(name).currentLeader();
        }

        @Override
        public void close() {
            LeaderElection r;
            synchronized (lock) {
                if (closed) {
                    return;
                }
                closed = true;
                r = real;
                lock.notifyAll();
            }
            waitingElections.remove(this);
            if (r != null) {
                r.close();
            }
        }

        @Override
        public String toString() {
            LeaderElection r = real();
            return r != null ? r.toString() : "LeaderElection[" + name + ", " + LazyLockClient.this + "]";
        }
    }
}
