package io.dlock;

/**
 * The names and tags of the meters a client records when {@link
 * LockOptions.Builder#metricsRegistry(Object)} is set, in one place for dashboards and alerts.
 *
 * <p>Every meter carries {@link #TAG_BACKEND}; with {@link
 * LockOptions.Builder#metricsPerLockName(boolean)} it also carries {@link #TAG_LOCK}.
 *
 * <p>Thread-safety: constants only.
 */
public final class LockMetricNames {
    /** Timer: from the acquire call to its outcome; tags {@link #TAG_KIND} and {@link #TAG_OUTCOME}. */
    public static final String ACQUIRE = "dlock.acquire";
    /** Gauge: leases this client holds now (a reentrant lease counts once). */
    public static final String HELD = "dlock.held";
    /** Gauge: acquisitions of this client waiting now, in the backend's queue or the JVM-local one. */
    public static final String WAITING = "dlock.waiting";
    /** Counter: leases lost (not released by their owner); tag {@link #TAG_CAUSE}. */
    public static final String LEASE_LOST = "dlock.lease.lost";
    /** Counter: lease renewals sent by lease backends; tag {@link #TAG_OUTCOME} ({@code ok}, {@code failed}). */
    public static final String RENEWAL = "dlock.renewal";
    /** Counter: grants passed to the next waiter of the same client without a server round trip. */
    public static final String LOCAL_HANDOFF = "dlock.handoff.local";

    /**
     * Gauge: 1 while this client's candidate of the election leads, else 0; one per started
     * candidate, tags {@link #TAG_ELECTION} and {@code client} (a number per client of the JVM, as
     * {@link #HELD} has). Summed over a fleet it must never exceed 1 for long.
     */
    public static final String LEADER = "dlock.leader";
    /**
     * Counter: terms of this client's candidate, tags {@link #TAG_ELECTION} and {@link #TAG_EVENT}
     * ({@code elected}; how a term ended: {@code lost}, {@code given-up}, {@code closed}).
     */
    public static final String LEADER_TERMS = "dlock.leader.terms";
    /** Timer: how long each term of this client's candidate lasted; tag {@link #TAG_ELECTION}. */
    public static final String LEADER_TERM = "dlock.leader.term";

    /** Tag: the backend's name, for example {@code redis}. */
    public static final String TAG_BACKEND = "backend";
    /** Tag: {@code lock}, {@code read}, {@code write} or {@code semaphore}. */
    public static final String TAG_KIND = "kind";
    /** Tag: {@code acquired}, {@code timeout}, {@code error} or {@code cancelled} (acquire); {@code ok} or {@code failed} (renewal). */
    public static final String TAG_OUTCOME = "outcome";
    /**
     * Tag: why a lease was lost: {@code session} (session or connection lost), {@code suspended}
     * (connection down too long), {@code stall} (JVM paused too long), {@code expired} (not
     * renewed in time), {@code removed} (the server no longer has the grant) or {@code forced} (an
     * operator removed the grant, {@code dlock release --force}, and the server told the holder).
     */
    public static final String TAG_CAUSE = "cause";
    /** Tag: the election's name (leader meters only; elections are few, so always tagged). */
    public static final String TAG_ELECTION = "election";
    /** Tag: what happened to a term: {@code elected}, {@code lost}, {@code given-up} or {@code closed}. */
    public static final String TAG_EVENT = "event";
    /** Tag: the lock's name, only with {@link LockOptions.Builder#metricsPerLockName(boolean)}. */
    public static final String TAG_LOCK = "lock";

    private LockMetricNames() {}
}
