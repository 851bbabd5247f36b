package io.dlock.spring.boot.autoconfigure;

import io.dlock.LockOptions;
import io.dlock.RetryPolicy;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code dlock.*} properties: the backend URI and the {@link LockOptions} of the auto-configured
 * client. Each default equals the {@code LockOptions.DEFAULT_*} constant of the same name.
 *
 * <p>Thread-safety: a mutable bean that Spring binds once at startup; read-only afterwards.
 */
@ConfigurationProperties(prefix = "dlock")
public class DLockProperties {
    /**
     * The backend URI, e.g. zookeeper://host:2181/app, redis://host:6379. Without it no LockClient is
     * auto-configured. Query parameters in it override the properties below.
     */
    private @Nullable String uri;

    /**
     * When the auto-configured client connects. lazy: in the background, so that the application
     * starts while the backend is down (lock calls fail with LockBackendException and the health
     * component is DOWN until it is reachable; attempts back off from retry.base-sleep to
     * retry.max-sleep). eager: at startup, and an unreachable backend fails the startup. A malformed
     * URI or option fails the startup either way.
     */
    private Connect connect = Connect.LAZY;

    /** How long a grant lives without renewal on lease-based backends (Redis, SQL, etcd, Memcached). */
    private Duration leaseTime = Duration.ofSeconds(30);

    /** How long a ZooKeeper session (and so its grants) outlives a silent client. */
    private Duration sessionTimeout = Duration.ofSeconds(10);

    /** How long to wait for a connection, at connect and before failing an operation. */
    private Duration connectTimeout = Duration.ofSeconds(10);

    /** Whether open leases are renewed in the background on lease-based backends. */
    private boolean renewal = true;

    /** Whether waiters are granted in order of arrival where the backend can queue. */
    private boolean fair = true;

    /** Whether locks are reentrant for their holder thread. */
    private boolean reentrant = true;

    /** Whether threads of this client waiting for the same lock queue inside the JVM (one backend waiter). */
    private boolean localQueueing = true;

    /** How many consecutive local hand-offs one backend grant may serve (0 to 1023). */
    private int maxLocalHandoffs = 64;

    /** How many threads complete acquireAsync futures (1 to 64). */
    private int callbackThreads = 2;

    private final Retry retry = new Retry();

    private final Metrics metrics = new Metrics();

    private final Observations observations = new Observations();

    private final Health health = new Health();

    private final Scheduled scheduled = new Scheduled();

    /** When the auto-configured client connects ({@code dlock.connect}). */
    public enum Connect {
        /** In the background; the application starts while the backend is down. */
        LAZY,
        /** At startup; an unreachable backend fails the startup. */
        EAGER
    }

    /** Defaults of {@code @ScheduledLock}. */
    public static class Scheduled {
        /**
         * lockAtMostFor of @ScheduledLock methods that leave it empty. Unset: such a method fails the
         * startup.
         */
        private @Nullable Duration defaultLockAtMostFor;

        /** lockAtLeastFor of @ScheduledLock methods that leave it empty. Unset: 0s (released when the job returns). */
        private @Nullable Duration defaultLockAtLeastFor;

        public @Nullable Duration getDefaultLockAtMostFor() {
            return defaultLockAtMostFor;
        }

        public void setDefaultLockAtMostFor(@Nullable Duration defaultLockAtMostFor) {
            this.defaultLockAtMostFor = defaultLockAtMostFor;
        }

        public @Nullable Duration getDefaultLockAtLeastFor() {
            return defaultLockAtLeastFor;
        }

        public void setDefaultLockAtLeastFor(@Nullable Duration defaultLockAtLeastFor) {
            this.defaultLockAtLeastFor = defaultLockAtLeastFor;
        }
    }

    /** The retry policy for backend operations (exponential backoff). */
    public static class Retry {
        /** The first sleep between retries. */
        private Duration baseSleep = Duration.ofMillis(100);

        /** The longest sleep between retries. */
        private Duration maxSleep = Duration.ofSeconds(5);

        /** How many times an operation is retried. */
        private int maxRetries = 10;

        public Duration getBaseSleep() {
            return baseSleep;
        }

        public void setBaseSleep(Duration baseSleep) {
            this.baseSleep = baseSleep;
        }

        public Duration getMaxSleep() {
            return maxSleep;
        }

        public void setMaxSleep(Duration maxSleep) {
            this.maxSleep = maxSleep;
        }

        public int getMaxRetries() {
            return maxRetries;
        }

        public void setMaxRetries(int maxRetries) {
            this.maxRetries = maxRetries;
        }
    }

    /** Micrometer metrics of the auto-configured client. */
    public static class Metrics {
        /** Whether the application's MeterRegistry (if any) receives dlock's meters. */
        private boolean enabled = true;

        /** Whether meters are tagged with the lock name (one meter per name: mind the cardinality). */
        private boolean perLockName = false;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public boolean isPerLockName() {
            return perLockName;
        }

        public void setPerLockName(boolean perLockName) {
            this.perLockName = perLockName;
        }
    }

    /** Micrometer observations of the auto-configured client's acquisitions (traces of lock waits). */
    public static class Observations {
        /** Whether each acquire is an observation in the application's ObservationRegistry (if any). */
        private boolean enabled = true;

        /** Whether observations carry the lock name as a high-cardinality key (spans, not meters). */
        private boolean perLockName = false;

        public boolean isEnabled() {
            return enabled;
        }

        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        public boolean isPerLockName() {
            return perLockName;
        }

        public void setPerLockName(boolean perLockName) {
            this.perLockName = perLockName;
        }
    }

    /** The dlock health indicator. */
    public static class Health {
        /** The reserved lock the health check tries once without waiting. */
        private String lockName = "dlock-health";

        /** How long the health check waits for the backend's answer before reporting DOWN. */
        private Duration timeout = Duration.ofSeconds(2);

        /**
         * How often the health check really probes the backend (one attempt on lock-name, a write);
         * calls in between return the last probe's result.
         */
        private Duration probeInterval = Duration.ofSeconds(30);

        public Duration getProbeInterval() {
            return probeInterval;
        }

        public void setProbeInterval(Duration probeInterval) {
            this.probeInterval = probeInterval;
        }

        public String getLockName() {
            return lockName;
        }

        public void setLockName(String lockName) {
            this.lockName = lockName;
        }

        public Duration getTimeout() {
            return timeout;
        }

        public void setTimeout(Duration timeout) {
            this.timeout = timeout;
        }
    }

    /**
     * The client options these properties describe.
     *
     * <p>Blocking: never. Thread-safety: not thread-safe (reads the mutable properties). On failure:
     * {@link IllegalArgumentException} or {@link IllegalStateException} from {@link LockOptions}'s
     * builder, naming the offending option.
     *
     * @return a builder holding these options; the caller may add the metrics and observation registries
     */
    public LockOptions.Builder toOptions() {
        return LockOptions.builder()
                .leaseTime(leaseTime)
                .sessionTimeout(sessionTimeout)
                .connectTimeout(connectTimeout)
                .renewal(renewal)
                .fair(fair)
                .reentrant(reentrant)
                .localQueueing(localQueueing)
                .maxLocalHandoffs(maxLocalHandoffs)
                .callbackThreads(callbackThreads)
                .retryPolicy(RetryPolicy.exponentialBackoff(retry.baseSleep, retry.maxSleep, retry.maxRetries))
                .metricsPerLockName(metrics.perLockName)
                .observationsPerLockName(observations.perLockName);
    }

    public @Nullable String getUri() {
        return uri;
    }

    public void setUri(@Nullable String uri) {
        this.uri = uri;
    }

    public Duration getLeaseTime() {
        return leaseTime;
    }

    public void setLeaseTime(Duration leaseTime) {
        this.leaseTime = leaseTime;
    }

    public Duration getSessionTimeout() {
        return sessionTimeout;
    }

    public void setSessionTimeout(Duration sessionTimeout) {
        this.sessionTimeout = sessionTimeout;
    }

    public Duration getConnectTimeout() {
        return connectTimeout;
    }

    public void setConnectTimeout(Duration connectTimeout) {
        this.connectTimeout = connectTimeout;
    }

    public boolean isRenewal() {
        return renewal;
    }

    public void setRenewal(boolean renewal) {
        this.renewal = renewal;
    }

    public boolean isFair() {
        return fair;
    }

    public void setFair(boolean fair) {
        this.fair = fair;
    }

    public boolean isReentrant() {
        return reentrant;
    }

    public void setReentrant(boolean reentrant) {
        this.reentrant = reentrant;
    }

    public boolean isLocalQueueing() {
        return localQueueing;
    }

    public void setLocalQueueing(boolean localQueueing) {
        this.localQueueing = localQueueing;
    }

    public int getMaxLocalHandoffs() {
        return maxLocalHandoffs;
    }

    public void setMaxLocalHandoffs(int maxLocalHandoffs) {
        this.maxLocalHandoffs = maxLocalHandoffs;
    }

    public int getCallbackThreads() {
        return callbackThreads;
    }

    public void setCallbackThreads(int callbackThreads) {
        this.callbackThreads = callbackThreads;
    }

    public Retry getRetry() {
        return retry;
    }

    public Metrics getMetrics() {
        return metrics;
    }

    public Observations getObservations() {
        return observations;
    }

    public Health getHealth() {
        return health;
    }

    public Scheduled getScheduled() {
        return scheduled;
    }

    public Connect getConnect() {
        return connect;
    }

    public void setConnect(Connect connect) {
        this.connect = connect;
    }
}
