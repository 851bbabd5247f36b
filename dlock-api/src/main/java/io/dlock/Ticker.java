package io.dlock;

/**
 * A nanosecond time source. dlock computes every deadline, renewal and safety margin from it; the
 * wall clock is used only for display. Tests inject a fake ticker to drive expiry without sleeping.
 *
 * <p>Thread-safety: implementations must be safe for use from any thread.
 */
@FunctionalInterface
public interface Ticker {

    /**
     * The current reading, in nanoseconds from an arbitrary origin. Only differences between
     * readings are meaningful.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: must not fail.
     *
     * @return the current reading
     */
    long read();

    /**
     * The system's monotonic clock, {@link System#nanoTime()}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the system ticker
     */
    static Ticker system() {
        return System::nanoTime;
    }
}
