package io.dlock.testkit;

import io.dlock.testkit.FencedStore.Access;
import io.dlock.testkit.FencedStore.Kind;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Judges a {@link FencedStore}'s history: did lock holders overlap, were updates lost, and did
 * fencing refuse what it should?
 *
 * <p>A <em>critical section</em> is every access by one client with one token (one grant), from
 * its first access to its last in the store's order. A section <em>overlaps</em> (is interrupted)
 * when another section's access falls between its first and last access. The checker reports:
 *
 * <ul>
 *   <li>{@link Report#overlaps()}: interrupted sections over all accesses, refused ones included. A
 *       holder paused between its read and its write is one interrupted section however many
 *       sections ran meanwhile; it counts even when fencing refused its write: this is what the
 *       store saw, not what it let through.
 *   <li>{@link Report#acceptedOverlaps()}: sections interrupted counting only accepted accesses.
 *       With fencing this must be 0.
 *   <li>{@link Report#lostUpdates()}: accepted writes whose section read a value that another
 *       write had replaced before this write landed (read-modify-write lost someone's update).
 *   <li>{@link Report#staleWritesRejected()} and {@link Report#staleReadsRejected()}: what fencing
 *       refused.
 *   <li>{@link Report#staleWritesAccepted()}: accepted writes whose token was lower than a token
 *       the store had already accepted, recomputed from the history rather than trusted from the
 *       store. With fencing this must be 0.
 *   <li>{@link Report#shortfall()}: for a workload where every write adds one to what its section
 *       read, {@code initial + accepted writes - final value}; 0 when no increment was lost.
 * </ul>
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class FencingChecker {

    private FencingChecker() {}

    /**
     * The checker's findings.
     *
     * @param accesses how many accesses were judged
     * @param sections how many critical sections (distinct client and token) accessed the store
     * @param acceptedWrites writes the store performed
     * @param overlaps sections into which another section's access fell, counting every access
     * @param acceptedOverlaps sections interrupted by another's accepted access, counting accepted
     *     accesses only
     * @param lostUpdates accepted writes that overwrote an update their section had not read
     * @param staleWritesRejected writes refused for a stale token
     * @param staleReadsRejected reads refused for a stale token
     * @param staleWritesAccepted accepted writes carrying a token lower than one accepted before
     * @param initialValue the store's value before the first access
     * @param finalValue the store's value after the last access
     * @param firstProblem a description of the first accepted overlap, lost update or accepted
     *     stale write, or {@code ""} if there was none
     */
    public record Report(
            long accesses,
            long sections,
            long acceptedWrites,
            long overlaps,
            long acceptedOverlaps,
            long lostUpdates,
            long staleWritesRejected,
            long staleReadsRejected,
            long staleWritesAccepted,
            long initialValue,
            long finalValue,
            String firstProblem) {

        /**
         * Returns {@code initialValue + acceptedWrites - finalValue}: the increments missing from
         * the final value when every write adds one to what its section read.
         *
         * @return 0 when no increment was lost
         */
        public long shortfall() {
            return initialValue + acceptedWrites - finalValue;
        }

        /**
         * Returns whether fencing held: no accepted overlap, no lost update and no accepted stale
         * write.
         *
         * @return true when the resource stayed consistent
         */
        public boolean safe() {
            return acceptedOverlaps == 0 && lostUpdates == 0 && staleWritesAccepted == 0;
        }
    }

    /**
     * Judges a history.
     *
     * <p>Blocking: never; O(n log n) in the number of accesses. Thread-safety: safe from any thread.
     * On failure: {@link IllegalArgumentException} if the accesses are not in sequence order.
     *
     * @param accesses the store's accesses in its order, as from {@link FencedStore#accesses()}
     * @param initialValue the value before the first access
     * @param finalValue the value after the last access
     * @return the report
     * @throws IllegalArgumentException if the sequence numbers do not increase
     */
    public static Report check(List<Access> accesses, long initialValue, long finalValue) {
        Objects.requireNonNull(accesses, "accesses");
        // section -> {first, last, count}, in positions among all accesses and among accepted ones
        Map<Section, long[]> all = new LinkedHashMap<>();
        Map<Section, long[]> accepted = new LinkedHashMap<>();
        long acceptedPosition = 0;
        Map<Section, Long> lastRead = new HashMap<>();
        long previous = -1;
        long value = initialValue;
        long highest = FencedStore.NO_TOKEN;
        long acceptedWrites = 0;
        long lostUpdates = 0;
        long staleWritesRejected = 0;
        long staleReadsRejected = 0;
        long staleWritesAccepted = 0;
        String firstProblem = "";
        for (Access a : accesses) {
            if (a.sequence() <= previous) {
                throw new IllegalArgumentException("accesses out of order at sequence " + a.sequence());
            }
            previous = a.sequence();
            Section s = new Section(a.client(), a.token());
            span(all, s, a.sequence());
            if (!a.accepted()) {
                if (a.kind() == Kind.WRITE) {
                    staleWritesRejected++;
                } else {
                    staleReadsRejected++;
                }
                continue;
            }
            span(accepted, s, acceptedPosition++);
            if (a.kind() == Kind.READ) {
                lastRead.put(s, a.value());
            } else {
                acceptedWrites++;
                Long read = lastRead.get(s);
                if (read != null && read != value) {
                    lostUpdates++;
                    if (firstProblem.isEmpty()) {
                        firstProblem = "lost update: " + describe(a) + " read " + read + " but the value was " + value;
                    }
                }
                if (highest != FencedStore.NO_TOKEN && a.token() < highest) {
                    staleWritesAccepted++;
                    if (firstProblem.isEmpty()) {
                        firstProblem = "stale write accepted: " + describe(a) + " after token " + highest;
                    }
                }
                value = a.value();
                lastRead.put(s, a.value()); // a second write in the same section builds on the first
            }
            highest = Math.max(highest, a.token());
        }
        long overlaps = interrupted(all.values());
        long acceptedOverlaps = interrupted(accepted.values());
        if (acceptedOverlaps > 0 && firstProblem.isEmpty()) {
            firstProblem = "accepted accesses of two sections interleaved (positions among accepted accesses): "
                    + firstOverlap(accepted);
        }
        return new Report(
                accesses.size(),
                all.size(),
                acceptedWrites,
                overlaps,
                acceptedOverlaps,
                lostUpdates,
                staleWritesRejected,
                staleReadsRejected,
                staleWritesAccepted,
                initialValue,
                finalValue,
                firstProblem);
    }

    private record Section(String client, long token) {}

    private static void span(Map<Section, long[]> spans, Section s, long position) {
        long[] span = spans.get(s);
        if (span == null) {
            spans.put(s, new long[] {position, position, 1});
        } else {
            span[1] = position;
            span[2]++;
        }
    }

    /**
     * Counts the sections another section's access broke into: positions are consecutive, so a
     * section was interrupted exactly when it holds fewer accesses than its span has positions.
     */
    private static long interrupted(Collection<long[]> spans) {
        long n = 0;
        for (long[] s : spans) {
            if (s[2] < s[1] - s[0] + 1) {
                n++;
            }
        }
        return n;
    }

    private static String firstOverlap(Map<Section, long[]> spans) {
        List<Map.Entry<Section, long[]>> sorted = new ArrayList<>(spans.entrySet());
        sorted.sort(Comparator.comparingLong(e -> e.getValue()[0]));
        Map.Entry<Section, long[]> open = null;
        for (Map.Entry<Section, long[]> e : sorted) {
            if (open != null && e.getValue()[0] < open.getValue()[1]) {
                return open.getKey() + " " + range(open.getValue()) + " and " + e.getKey() + " " + range(e.getValue());
            }
            if (open == null || e.getValue()[1] > open.getValue()[1]) {
                open = e;
            }
        }
        return "";
    }

    private static String range(long[] span) {
        return "[#" + span[0] + "..#" + span[1] + "]";
    }

    private static String describe(Access a) {
        return a.kind() + " #" + a.sequence() + " by " + a.client() + " with token " + a.token();
    }
}
