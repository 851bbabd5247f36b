package io.dlock;

import java.time.Duration;
import java.util.Objects;

/**
 * How a backend client retries an operation that failed because the connection dropped:
 * exponential backoff from {@link #baseSleep()} up to {@link #maxSleep()}, at most {@link
 * #maxRetries()} times. Retries never re-send a request that may already have been applied without
 * first checking whether it was (see each backend's page in docs/backends/).
 *
 * <p>Thread-safety: immutable.
 */
public final class RetryPolicy {
    /** The default first sleep between retries: 100 ms. */
    public static final Duration DEFAULT_BASE_SLEEP = Duration.ofMillis(100);
    /** The default longest sleep between retries: 5 s. */
    public static final Duration DEFAULT_MAX_SLEEP = Duration.ofSeconds(5);
    /** The default number of retries: 10. */
    public static final int DEFAULT_MAX_RETRIES = 10;

    private static final RetryPolicy DEFAULT =
            new RetryPolicy(DEFAULT_BASE_SLEEP, DEFAULT_MAX_SLEEP, DEFAULT_MAX_RETRIES);

    private final Duration baseSleep;
    private final Duration maxSleep;
    private final int maxRetries;

    private RetryPolicy(Duration baseSleep, Duration maxSleep, int maxRetries) {
        this.baseSleep = baseSleep;
        this.maxSleep = maxSleep;
        this.maxRetries = maxRetries;
    }

    /**
     * Exponential backoff with the defaults: 100 ms, doubling up to 5 s, 10 retries.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the default policy
     */
    public static RetryPolicy defaults() {
        return DEFAULT;
    }

    /**
     * Exponential backoff: sleep {@code baseSleep}, then twice that, up to {@code maxSleep}, for at
     * most {@code maxRetries} retries.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws, nothing created.
     *
     * @param baseSleep the first sleep, positive
     * @param maxSleep the longest sleep, at least {@code baseSleep}
     * @param maxRetries how many retries, 0 (no retry) or more
     * @return the policy
     * @throws IllegalArgumentException if a sleep is not positive, {@code maxSleep < baseSleep}, or
     *     {@code maxRetries} is negative
     */
    public static RetryPolicy exponentialBackoff(Duration baseSleep, Duration maxSleep, int maxRetries) {
        Objects.requireNonNull(baseSleep, "baseSleep");
        Objects.requireNonNull(maxSleep, "maxSleep");
        if (baseSleep.isNegative() || baseSleep.isZero()) {
            throw new IllegalArgumentException("retry baseSleep must be positive: " + baseSleep);
        }
        if (maxSleep.compareTo(baseSleep) < 0) {
            throw new IllegalArgumentException(
                    "retry maxSleep " + maxSleep + " must not be less than baseSleep " + baseSleep);
        }
        if (maxRetries < 0) {
            throw new IllegalArgumentException("retry maxRetries must not be negative: " + maxRetries);
        }
        return new RetryPolicy(baseSleep, maxSleep, maxRetries);
    }

    /**
     * The first sleep.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the first sleep between retries
     */
    public Duration baseSleep() {
        return baseSleep;
    }

    /**
     * The longest sleep.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the cap on the sleep between retries
     */
    public Duration maxSleep() {
        return maxSleep;
    }

    /**
     * The number of retries.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return how many times a failed operation is retried
     */
    public int maxRetries() {
        return maxRetries;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RetryPolicy other
                && baseSleep.equals(other.baseSleep)
                && maxSleep.equals(other.maxSleep)
                && maxRetries == other.maxRetries;
    }

    @Override
    public int hashCode() {
        return Objects.hash(baseSleep, maxSleep, maxRetries);
    }

    @Override
    public String toString() {
        return "RetryPolicy[exponential " + baseSleep + ".." + maxSleep + ", " + maxRetries + " retries]";
    }
}
