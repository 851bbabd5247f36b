package io.dlock;

import java.time.Duration;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * A client's options. Immutable; build with {@link #builder()} or start from {@link #defaults()}.
 * Query parameters of the connect URI override these (see docs/api.md, Options).
 *
 * <pre>{@code
 * LockOptions options = LockOptions.builder()
 *         .sessionTimeout(Duration.ofSeconds(5))
 *         .build();
 * }</pre>
 *
 * <p>Thread-safety: immutable; the builder is not thread-safe.
 */
public final class LockOptions {
    /** How long a grant lives without renewal on lease-based backends (Redis, SQL, etcd, Memcached): 30 s. */
    public static final Duration DEFAULT_LEASE_TIME = Duration.ofSeconds(30);
    /** How long a ZooKeeper session (and so its grants) outlives a silent client: 10 s. */
    public static final Duration DEFAULT_SESSION_TIMEOUT = Duration.ofSeconds(10);
    /** How long to wait for a connection, at connect and before failing an operation: 10 s. */
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(10);
    /** Whether open leases are renewed in the background on lease-based backends: true. */
    public static final boolean DEFAULT_RENEWAL = true;
    /** Whether waiters are granted in order of arrival where the backend can queue: true. */
    public static final boolean DEFAULT_FAIR = true;
    /**
     * Whether locks are reentrant: true. False gives a mutex that its holder thread cannot re-enter
     * (a re-entry waits or times out like any other acquirer) and whose lease may be released from
     * any thread, like Curator's {@code InterProcessSemaphoreMutex}.
     */
    public static final boolean DEFAULT_REENTRANT = true;
    /**
     * Whether threads of one client that wait for the same exclusive lock queue inside the JVM, with
     * only one of them in the backend's queue: true. A release then hands the lock to the next local
     * waiter without a server round trip, up to {@link #DEFAULT_MAX_LOCAL_HANDOFFS} times in a row.
     */
    public static final boolean DEFAULT_LOCAL_QUEUEING = true;
    /**
     * How many consecutive local hand-offs one backend grant may serve before the lock goes back to
     * the backend's queue, so that other clients are not starved: 64.
     */
    public static final int DEFAULT_MAX_LOCAL_HANDOFFS = 64;
    /** The highest {@code maxLocalHandoffs}: local grants use the low 10 bits of the fencing token. */
    public static final int MAX_LOCAL_HANDOFFS_LIMIT = 1023;
    /**
     * How many threads complete {@code acquireAsync} futures (and so run continuations attached to
     * them without an executor): 2. {@code onLost} listeners have a thread of their own.
     */
    public static final int DEFAULT_CALLBACK_THREADS = 2;

    private static final LockOptions DEFAULTS = new Builder().build();

    private final Duration leaseTime;
    private final Duration sessionTimeout;
    private final Duration connectTimeout;
    private final boolean renewal;
    private final boolean fair;
    private final boolean reentrant;
    private final RetryPolicy retryPolicy;
    private final Ticker ticker;
    private final int callbackThreads;
    private final boolean localQueueing;
    private final int maxLocalHandoffs;
    private final @Nullable Object metricsRegistry;
    private final boolean metricsPerLockName;
    private final @Nullable Object observationRegistry;
    private final boolean observationsPerLockName;

    private LockOptions(Builder b) {
        this.leaseTime = b.leaseTime;
        this.sessionTimeout = b.sessionTimeout;
        this.connectTimeout = b.connectTimeout;
        this.renewal = b.renewal;
        this.fair = b.fair;
        this.reentrant = b.reentrant;
        this.retryPolicy = b.retryPolicy;
        this.ticker = b.ticker;
        this.callbackThreads = b.callbackThreads;
        this.localQueueing = b.localQueueing;
        this.maxLocalHandoffs = b.maxLocalHandoffs;
        this.metricsRegistry = b.metricsRegistry;
        this.metricsPerLockName = b.metricsPerLockName;
        this.observationRegistry = b.observationRegistry;
        this.observationsPerLockName = b.observationsPerLockName;
    }

    /**
     * The default options (every {@code DEFAULT_*} constant).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the shared default instance
     */
    public static LockOptions defaults() {
        return DEFAULTS;
    }

    /**
     * A builder starting from the defaults.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread; the builder itself is not. On
     * failure: cannot fail.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * A builder starting from these options.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread; the builder itself is not. On
     * failure: cannot fail.
     *
     * @return a new builder holding this instance's values
     */
    public Builder toBuilder() {
        return new Builder(this);
    }

    /**
     * Grant lifetime without renewal on lease-based backends; default {@link #DEFAULT_LEASE_TIME}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the lease time
     */
    public Duration leaseTime() {
        return leaseTime;
    }

    /**
     * ZooKeeper session timeout; default {@link #DEFAULT_SESSION_TIMEOUT}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the session timeout
     */
    public Duration sessionTimeout() {
        return sessionTimeout;
    }

    /**
     * Connection wait; default {@link #DEFAULT_CONNECT_TIMEOUT}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the connect timeout
     */
    public Duration connectTimeout() {
        return connectTimeout;
    }

    /**
     * Background renewal on lease-based backends; default {@link #DEFAULT_RENEWAL}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return whether open leases are renewed
     */
    public boolean renewal() {
        return renewal;
    }

    /**
     * FIFO granting where the backend can queue; default {@link #DEFAULT_FAIR}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return whether locks are fair
     */
    public boolean fair() {
        return fair;
    }

    /**
     * Reentrant, thread-owned locks; default {@link #DEFAULT_REENTRANT}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return whether locks are reentrant
     */
    public boolean reentrant() {
        return reentrant;
    }

    /**
     * Connection retry policy; default {@link RetryPolicy#defaults()}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the retry policy
     */
    public RetryPolicy retryPolicy() {
        return retryPolicy;
    }

    /**
     * Time source for deadlines and margins; default {@link Ticker#system()}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the ticker
     */
    public Ticker ticker() {
        return ticker;
    }

    /**
     * Size of the client's callback pool; default {@link #DEFAULT_CALLBACK_THREADS}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the number of callback threads
     */
    public int callbackThreads() {
        return callbackThreads;
    }

    /**
     * JVM-local queueing of exclusive-lock waiters; default {@link #DEFAULT_LOCAL_QUEUEING}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return whether waiters of one client queue locally
     */
    public boolean localQueueing() {
        return localQueueing;
    }

    /**
     * Consecutive local hand-offs per backend grant; default {@link #DEFAULT_MAX_LOCAL_HANDOFFS}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the bound
     */
    public int maxLocalHandoffs() {
        return maxLocalHandoffs;
    }

    /**
     * The Micrometer {@code MeterRegistry} the client records its meters in (see {@link
     * LockMetricNames}), or empty for no metrics (the default).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the registry, typed {@code Object} because dlock-api depends on nothing
     */
    public java.util.Optional<Object> metricsRegistry() {
        return java.util.Optional.ofNullable(metricsRegistry);
    }

    /**
     * Whether meters carry the lock's name as a tag; off by default, since every lock name then
     * makes meters of its own.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return true if meters are tagged with {@link LockMetricNames#TAG_LOCK}
     */
    public boolean metricsPerLockName() {
        return metricsPerLockName;
    }

    /**
     * The Micrometer {@code ObservationRegistry} in which each acquire is an observation named
     * {@link LockMetricNames#ACQUIRE}, or empty for none (the default).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the registry, typed {@code Object} because dlock-api depends on nothing
     */
    public java.util.Optional<Object> observationRegistry() {
        return java.util.Optional.ofNullable(observationRegistry);
    }

    /**
     * Whether acquire observations carry the lock's name as a high-cardinality key (traces, not
     * meters); off by default.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return true if observations carry {@link LockMetricNames#TAG_LOCK}
     */
    public boolean observationsPerLockName() {
        return observationsPerLockName;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof LockOptions other
                && leaseTime.equals(other.leaseTime)
                && sessionTimeout.equals(other.sessionTimeout)
                && connectTimeout.equals(other.connectTimeout)
                && renewal == other.renewal
                && fair == other.fair
                && reentrant == other.reentrant
                && retryPolicy.equals(other.retryPolicy)
                && ticker == other.ticker
                && callbackThreads == other.callbackThreads
                && localQueueing == other.localQueueing
                && maxLocalHandoffs == other.maxLocalHandoffs
                && metricsRegistry == other.metricsRegistry
                && metricsPerLockName == other.metricsPerLockName
                && observationRegistry == other.observationRegistry
                && observationsPerLockName == other.observationsPerLockName;
    }

    @Override
    public int hashCode() {
        return Objects.hash(
                leaseTime,
                sessionTimeout,
                connectTimeout,
                renewal,
                fair,
                reentrant,
                retryPolicy,
                callbackThreads,
                localQueueing,
                maxLocalHandoffs,
                metricsPerLockName,
                observationsPerLockName);
    }

    @Override
    public String toString() {
        return "LockOptions[leaseTime=" + leaseTime + ", sessionTimeout=" + sessionTimeout
                + ", connectTimeout=" + connectTimeout + ", renewal=" + renewal + ", fair=" + fair + ", reentrant="
                + reentrant
                + ", retryPolicy=" + retryPolicy + ", callbackThreads=" + callbackThreads + ", localQueueing="
                + localQueueing + ", maxLocalHandoffs=" + maxLocalHandoffs
                + ", metrics="
                + (metricsRegistry == null ? "off" : metricsRegistry.getClass().getSimpleName())
                + (metricsPerLockName ? " per lock name" : "")
                + (observationRegistry == null
                        ? ""
                        : ", observations=" + observationRegistry.getClass().getSimpleName()
                                + (observationsPerLockName ? " per lock name" : ""))
                + "]";
    }

    /**
     * Builds {@link LockOptions}. Each setter checks its argument at once.
     *
     * <p>Thread-safety: not thread-safe; confine a builder to one thread.
     */
    public static final class Builder {
        private Duration leaseTime = DEFAULT_LEASE_TIME;
        private Duration sessionTimeout = DEFAULT_SESSION_TIMEOUT;
        private Duration connectTimeout = DEFAULT_CONNECT_TIMEOUT;
        private boolean renewal = DEFAULT_RENEWAL;
        private boolean fair = DEFAULT_FAIR;
        private boolean reentrant = DEFAULT_REENTRANT;
        private RetryPolicy retryPolicy = RetryPolicy.defaults();
        private Ticker ticker = Ticker.system();
        private int callbackThreads = DEFAULT_CALLBACK_THREADS;
        private boolean localQueueing = DEFAULT_LOCAL_QUEUEING;
        private int maxLocalHandoffs = DEFAULT_MAX_LOCAL_HANDOFFS;
        private @Nullable Object metricsRegistry;
        private boolean metricsPerLockName;
        private @Nullable Object observationRegistry;
        private boolean observationsPerLockName;

        private Builder() {}

        private Builder(LockOptions o) {
            this.leaseTime = o.leaseTime;
            this.sessionTimeout = o.sessionTimeout;
            this.connectTimeout = o.connectTimeout;
            this.renewal = o.renewal;
            this.fair = o.fair;
            this.reentrant = o.reentrant;
            this.retryPolicy = o.retryPolicy;
            this.ticker = o.ticker;
            this.callbackThreads = o.callbackThreads;
            this.localQueueing = o.localQueueing;
            this.maxLocalHandoffs = o.maxLocalHandoffs;
            this.metricsRegistry = o.metricsRegistry;
            this.metricsPerLockName = o.metricsPerLockName;
            this.observationRegistry = o.observationRegistry;
            this.observationsPerLockName = o.observationsPerLockName;
        }

        /**
         * Sets the grant lifetime on lease-based backends.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: throws, builder unchanged.
         *
         * @param leaseTime from 100 ms to 365 days
         * @return this builder
         * @throws IllegalArgumentException if shorter than 100 ms (a grant is renewed every third of
         *     its lease time and declared lost at least 10 ms before it runs out: a shorter lease could
         *     not be renewed reliably) or longer than 365 days
         */
        public Builder leaseTime(Duration leaseTime) {
            this.leaseTime = between("leaseTime", leaseTime, MIN_LEASE_TIME);
            return this;
        }

        /**
         * Sets the ZooKeeper session timeout (the server may clamp it to its own bounds).
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: throws, builder unchanged.
         *
         * @param sessionTimeout from 1 ms to 365 days
         * @return this builder
         * @throws IllegalArgumentException if shorter than 1 ms or longer than 365 days
         */
        public Builder sessionTimeout(Duration sessionTimeout) {
            this.sessionTimeout = positive("sessionTimeout", sessionTimeout);
            return this;
        }

        /**
         * Sets how long to wait for a connection.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: throws, builder unchanged.
         *
         * @param connectTimeout from 1 ms to 365 days
         * @return this builder
         * @throws IllegalArgumentException if shorter than 1 ms or longer than 365 days
         */
        public Builder connectTimeout(Duration connectTimeout) {
            this.connectTimeout = positive("connectTimeout", connectTimeout);
            return this;
        }

        /**
         * Turns background renewal on or off on lease-based backends. Off, a grant simply expires
         * after the lease time, for fire-and-forget jobs.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: cannot fail.
         *
         * @param renewal whether to renew open leases
         * @return this builder
         */
        public Builder renewal(boolean renewal) {
            this.renewal = renewal;
            return this;
        }

        /**
         * Turns FIFO granting on or off where the backend can queue.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: cannot fail.
         *
         * @param fair whether waiters are served in order of arrival
         * @return this builder
         */
        public Builder fair(boolean fair) {
            this.fair = fair;
            return this;
        }

        /**
         * Chooses reentrant, thread-owned locks (the default) or a non-reentrant mutex whose lease
         * may be released from any thread; see {@link LockOptions#DEFAULT_REENTRANT}.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: cannot fail.
         *
         * @param reentrant whether locks are reentrant
         * @return this builder
         */
        public Builder reentrant(boolean reentrant) {
            this.reentrant = reentrant;
            return this;
        }

        /**
         * Sets the connection retry policy.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: throws, builder unchanged.
         *
         * @param retryPolicy the policy
         * @return this builder
         * @throws NullPointerException if null
         */
        public Builder retryPolicy(RetryPolicy retryPolicy) {
            this.retryPolicy = Objects.requireNonNull(retryPolicy, "retryPolicy");
            return this;
        }

        /**
         * Sets the time source.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: throws, builder unchanged.
         *
         * @param ticker the ticker
         * @return this builder
         * @throws NullPointerException if null
         */
        public Builder ticker(Ticker ticker) {
            this.ticker = Objects.requireNonNull(ticker, "ticker");
            return this;
        }

        /**
         * Records the client's meters ({@link LockMetricNames}) in a Micrometer {@code
         * MeterRegistry}: acquire latency by outcome, held and waiting gauges, lost leases by
         * cause, renewals and local hand-offs. Micrometer must be on the class path; dlock itself
         * does not need it otherwise.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: cannot fail here; connecting
         * with an object that is not a {@code MeterRegistry} is an {@link IllegalArgumentException}.
         *
         * @param meterRegistry an {@code io.micrometer.core.instrument.MeterRegistry}, or null for no
         *     metrics
         * @return this builder
         */
        public Builder metricsRegistry(@Nullable Object meterRegistry) {
            this.metricsRegistry = meterRegistry;
            return this;
        }

        /**
         * Tags every meter with the lock's name ({@link LockMetricNames#TAG_LOCK}). Off by default:
         * each lock name then makes meters of its own, so turn it on only for a bounded set of
         * names.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: cannot fail.
         *
         * @param perLockName true to tag meters with the lock name
         * @return this builder
         */
        public Builder metricsPerLockName(boolean perLockName) {
            this.metricsPerLockName = perLockName;
            return this;
        }

        /**
         * Makes each acquire an observation ({@link LockMetricNames#ACQUIRE}) in a Micrometer
         * {@code ObservationRegistry}, so that traces show lock waits: started on the calling
         * thread (a child of its current observation), stopped with the outcome. Low-cardinality
         * keys: {@link LockMetricNames#TAG_BACKEND}, {@link LockMetricNames#TAG_KIND}, {@link
         * LockMetricNames#TAG_OUTCOME}. With a {@link #metricsRegistry(Object)} as well, the acquire
         * timer is left to the observation registry's handlers (a meter handler, which Spring Boot
         * registers, records it with the same tags), so it is not recorded twice; the other meters
         * stay in the meter registry. Micrometer's observation API must be on the class path.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: cannot fail here; connecting
         * with an object that is not an {@code ObservationRegistry} is an {@link
         * IllegalArgumentException}.
         *
         * @param observationRegistry an {@code io.micrometer.observation.ObservationRegistry}, or
         *     null for no observations
         * @return this builder
         */
        public Builder observationRegistry(@Nullable Object observationRegistry) {
            this.observationRegistry = observationRegistry;
            return this;
        }

        /**
         * Adds the lock's name to each acquire observation as a high-cardinality key ({@link
         * LockMetricNames#TAG_LOCK}): spans show it, meters made from the observation do not. Off by
         * default, since lock names often carry identifiers (order numbers, user ids).
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: cannot fail.
         *
         * @param perLockName true to add the lock name to observations
         * @return this builder
         */
        public Builder observationsPerLockName(boolean perLockName) {
            this.observationsPerLockName = perLockName;
            return this;
        }

        /**
         * Sets the size of the callback pool, the threads that complete {@code acquireAsync} futures.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: throws, builder unchanged.
         *
         * @param callbackThreads from 1 to 64
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder callbackThreads(int callbackThreads) {
            if (callbackThreads < 1 || callbackThreads > 64) {
                throw new IllegalArgumentException("callbackThreads must be between 1 and 64: " + callbackThreads);
            }
            this.callbackThreads = callbackThreads;
            return this;
        }

        /**
         * Turns JVM-local queueing on or off; see {@link LockOptions#DEFAULT_LOCAL_QUEUEING}. Off,
         * every waiting thread stands in the backend's queue itself.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: cannot fail.
         *
         * @param localQueueing whether waiters of one client queue locally
         * @return this builder
         */
        public Builder localQueueing(boolean localQueueing) {
            this.localQueueing = localQueueing;
            return this;
        }

        /**
         * Sets how many consecutive local hand-offs one backend grant may serve.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: throws, builder unchanged.
         *
         * @param maxLocalHandoffs from 0 (every grant goes through the backend) to {@link
         *     LockOptions#MAX_LOCAL_HANDOFFS_LIMIT}
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder maxLocalHandoffs(int maxLocalHandoffs) {
            if (maxLocalHandoffs < 0 || maxLocalHandoffs > MAX_LOCAL_HANDOFFS_LIMIT) {
                throw new IllegalArgumentException(
                        "maxLocalHandoffs must be between 0 and " + MAX_LOCAL_HANDOFFS_LIMIT + ": " + maxLocalHandoffs);
            }
            this.maxLocalHandoffs = maxLocalHandoffs;
            return this;
        }

        /**
         * Builds the options.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: throws, nothing built.
         *
         * @return the options
         * @throws IllegalStateException if the connect timeout is longer than the session timeout
         *     allows for a reconnect (more than 10 times it)
         */
        public LockOptions build() {
            if (connectTimeout.compareTo(sessionTimeout.multipliedBy(10)) > 0) {
                throw new IllegalStateException(
                        "connectTimeout " + connectTimeout + " must not exceed 10 x sessionTimeout " + sessionTimeout);
            }
            return new LockOptions(this);
        }

        private static final Duration MIN_LEASE_TIME = Duration.ofMillis(100);
        private static final Duration MAX_DURATION = Duration.ofDays(365);

        private static Duration positive(String name, Duration value) {
            return between(name, value, Duration.ofMillis(1));
        }

        private static Duration between(String name, Duration value, Duration min) {
            Objects.requireNonNull(value, name);
            if (value.compareTo(min) < 0) {
                throw new IllegalArgumentException(name + " must be at least " + min.toMillis() + "ms: " + value);
            }
            // Longer values would overflow the nanosecond deadlines the client computes from them.
            if (value.compareTo(MAX_DURATION) > 0) {
                throw new IllegalArgumentException(
                        name + " must be at most " + MAX_DURATION.toDays() + " days: " + value);
            }
            return value;
        }
    }
}
