package io.dlock.testkit;

import io.dlock.testkit.FencedStore.Access;
import io.dlock.testkit.FencedStore.Kind;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.PriorityQueue;

/**
 * Judges a {@link FencedStore}'s history: did lock holders overlap, were updates lost, and did
 * fencing refuse what it should?
 *
 * <p>A <em>critical section</em> is every access by one client with one token (one grant), from
 * its first access to its last in the store's order. Two sections <em>overlap</em> when one's
 * accesses fall between the other's first and last. The checker reports:
 *
 * <ul>
 *   <li>{@link Report#overlaps()}: pairs of overlapping sections over all accesses, refused ones
 *       included. A paused or partitioned holder that wakes up inside the next holder's section
 *       counts here even when fencing refused it: this is what the store saw, not what it let
 *       through.
 *   <li>{@link Report#acceptedOverlaps()}: pairs that overlap counting only accepted accesses.
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
     * @param overlaps pairs of sections that overlapped, counting every access
     * @param acceptedOverlaps pairs of sections whose accepted accesses overlapped
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
         * <p>Blocking: never. Thread-safety: immutable. On failure: never fails.
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
         * <p>Blocking: never. Thread-safety: immutable. On failure: never fails.
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
        Map<Section, long[]> all = new LinkedHashMap<>(); // section -> {first, last} sequence
        Map<Section, long[]> accepted = new LinkedHashMap<>();
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
            span(accepted, s, a.sequence());
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
        long overlaps = overlappingPairs(all.values());
        long acceptedOverlaps = overlappingPairs(accepted.values());
        if (acceptedOverlaps > 0 && firstProblem.isEmpty()) {
            firstProblem = "accepted accesses of two sections interleaved: " + firstOverlap(accepted);
        }
        return new Report(accesses.size(), all.size(), acceptedWrites, overlaps, acceptedOverlaps, lostUpdates,
                staleWritesRejected, staleReadsRejected, staleWritesAccepted, initialValue, finalValue, firstProblem);
    }

    private record Section(String client, long token) {}

    private static void span(Map<Section, long[]> spans, Section s, long sequence) {
        long[] span = spans.get(s);
        if (span == null) {
            spans.put(s, new long[] {sequence, sequence});
        } else {
            span[1] = sequence;
        }
    }

    /** Counts intersecting pairs among closed intervals with a sweep over their starts. */
    private static long overlappingPairs(java.util.Collection<long[]> spans) {
        List<long[]> sorted = new ArrayList<>(spans);
        sorted.sort(Comparator.comparingLong(s -> s[0]));
        PriorityQueue<Long> ends = new PriorityQueue<>();
        long pairs = 0;
        for (long[] s : sorted) {
            while (!ends.isEmpty() && ends.peek() < s[0]) {
                ends.poll();
            }
            pairs += ends.size();
            ends.add(s[1]);
        }
        return pairs;
    }

    private static String firstOverlap(Map<Section, long[]> spans) {
        List<Map.Entry<Section, long[]>> sorted = new ArrayList<>(spans.entrySet());
        sorted.sort(Comparator.comparingLong(e -> e.getValue()[0]));
        Map.Entry<Section, long[]> open = null;
        for (Map.Entry<Section, long[]> e : sorted) {
            if (open != null && e.getValue()[0] <= open.getValue()[1]) {
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
