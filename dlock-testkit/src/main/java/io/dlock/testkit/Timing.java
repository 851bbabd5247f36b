package io.dlock.testkit;

import java.time.Duration;
import java.util.Objects;

/**
 * Scales test waits by the system property {@value #PROPERTY}, so slow machines get longer
 * timeouts without editing tests.
 *
 * <p>Thread-safety: safe from any thread; the property is read on every call.
 */
public final class Timing {

    /** The system property holding the multiplier, for example {@code -Ddlock.test.timing=3}. */
    public static final String PROPERTY = "dlock.test.timing";

    /** The multiplier when the property is unset or blank. */
    public static final double DEFAULT_MULTIPLIER = 1.0;

    private Timing() {}

    /**
     * Returns the current wait multiplier from {@value #PROPERTY}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalArgumentException} naming the property and its value if it is not a finite number
     * greater than zero.
     *
     * @return the multiplier, {@link #DEFAULT_MULTIPLIER} if the property is unset or blank
     * @throws IllegalArgumentException if the property is not a finite number &gt; 0
     */
    public static double multiplier() {
        String raw = System.getProperty(PROPERTY);
        if (raw == null || raw.isBlank()) {
            return DEFAULT_MULTIPLIER;
        }
        double value;
        try {
            value = Double.parseDouble(raw.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(PROPERTY + " must be a number > 0, was '" + raw + "'", e);
        }
        if (!(value > 0) || Double.isInfinite(value)) {
            throw new IllegalArgumentException(PROPERTY + " must be a finite number > 0, was '" + raw + "'");
        }
        return value;
    }

    /**
     * Returns {@code d} multiplied by {@link #multiplier()}, rounded to the nanosecond.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalArgumentException} for a negative duration or a bad property; results too large for a
     * {@code Duration} in nanoseconds saturate at about 292 years.
     *
     * @param d the unscaled wait; {@link Duration#ZERO} stays zero
     * @return the scaled wait
     * @throws NullPointerException if {@code d} is null
     * @throws IllegalArgumentException if {@code d} is negative or the property is invalid
     */
    public static Duration scale(Duration d) {
        Objects.requireNonNull(d, "d");
        if (d.isNegative()) {
            throw new IllegalArgumentException("d must not be negative, was " + d);
        }
        double m = multiplier();
        if (m == 1.0) {
            return d;
        }
        double nanos = (d.getSeconds() * 1e9 + d.getNano()) * m;
        return nanos >= Long.MAX_VALUE ? Duration.ofNanos(Long.MAX_VALUE) : Duration.ofNanos(Math.round(nanos));
    }
}
