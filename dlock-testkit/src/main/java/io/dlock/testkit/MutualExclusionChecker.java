package io.dlock.testkit;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Detects overlapping critical sections in concurrency tests: call {@link #enter(String)} right
 * after acquiring a lock and {@link #exit(String)} right before releasing it.
 *
 * <p>It also offers a deliberately racy counter, {@link #incrementUnsafely()}, which loses
 * increments when two callers overlap, so a test can show mutual exclusion by the final count.
 *
 * <p>Thread-safety: safe from any thread, except the racy counter, which is the point.
 */
public final class MutualExclusionChecker {

    /** How many spin hints separate the counter's read from its write, widening the race window. */
    private static final int SPINS = 32;

    private final AtomicInteger inside = new AtomicInteger();
    private final AtomicInteger maxConcurrent = new AtomicInteger();
    private final AtomicLong violations = new AtomicLong();
    private final AtomicLong entries = new AtomicLong();
    private final Map<String, Integer> holders = new ConcurrentHashMap<>();
    private final AtomicReference<String> firstViolation = new AtomicReference<>();

    // Deliberately unguarded and not volatile: lost updates reveal missing mutual exclusion.
    private long counter;

    /** Creates a checker with nobody inside. */
    public MutualExclusionChecker() {}

    /**
     * Records that {@code who} entered the critical section; counts a violation if someone else is
     * already inside.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never throws; overlaps
     * are counted, not reported, so the test asserts {@link #violations()} at the end.
     *
     * @param who a name for the caller, used in {@link #firstViolation()}
     */
    public void enter(String who) {
        holders.merge(who, 1, Integer::sum);
        int now = inside.incrementAndGet();
        entries.incrementAndGet();
        maxConcurrent.accumulateAndGet(now, Math::max);
        if (now > 1) {
            violations.incrementAndGet();
            firstViolation.compareAndSet(null, who + " entered while inside: " + Map.copyOf(holders));
        }
    }

    /**
     * Records that {@code who} left the critical section.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} if {@code who} is not inside; the counts are left unchanged.
     *
     * @param who the name given to {@link #enter(String)}
     * @throws IllegalStateException if {@code who} did not enter
     */
    public void exit(String who) {
        boolean[] wasInside = {false};
        holders.computeIfPresent(who, (k, n) -> {
            wasInside[0] = true;
            return n == 1 ? null : n - 1;
        });
        if (!wasInside[0]) {
            throw new IllegalStateException("'" + who + "' exits but is not inside");
        }
        inside.decrementAndGet();
    }

    /**
     * Returns how many callers are inside right now.
     *
     * @return the current count
     */
    public int inside() {
        return inside.get();
    }

    /**
     * Returns the most callers ever inside at once; 1 when exclusion held.
     *
     * @return the maximum, 0 before any entry
     */
    public int maxConcurrent() {
        return maxConcurrent.get();
    }

    /**
     * Returns how many entries found someone else already inside.
     *
     * @return the violation count, 0 when exclusion held
     */
    public long violations() {
        return violations.get();
    }

    /**
     * Returns how many times {@link #enter(String)} was called.
     *
     * @return the entry count
     */
    public long entries() {
        return entries.get();
    }

    /**
     * Describes the first violation: who entered and who was inside at the time.
     *
     * @return the description, or empty if there was none
     */
    public Optional<String> firstViolation() {
        return Optional.ofNullable(firstViolation.get());
    }

    /**
     * Adds one to a plain {@code long} with a read, a short spin and a write, so that overlapping
     * callers lose increments.
     *
     * <p>Blocking: never (a few spin hints). Thread-safety: deliberately NOT thread-safe; call it
     * only while holding the lock under test. On failure: never throws; a lost update is the
     * signal.
     */
    public void incrementUnsafely() {
        long read = counter;
        for (int i = 0; i < SPINS; i++) {
            Thread.onSpinWait();
        }
        counter = read + 1;
    }

    /**
     * Returns the racy counter's value.
     *
     * @return the number of increments that were not lost
     */
    public long counter() {
        return counter;
    }
}
