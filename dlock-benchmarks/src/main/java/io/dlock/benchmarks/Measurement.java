package io.dlock.benchmarks;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * What one measured period of one implementation produced: how many operations completed inside
 * the window, how long the window was, the latency of each, and the critical sections (enter and
 * exit {@code System.nanoTime()} stamps, comparable across processes on Linux, where it is
 * {@code CLOCK_MONOTONIC}) for the overlap check.
 *
 * <p>Thread-safety: immutable once built.
 */
final class Measurement {
    final long ops;
    final long windowNanos;
    final long[] latencies;
    final long[] enters;
    final long[] exits;
    /** Overlaps seen directly (an in-JVM inside-counter above one), besides those found in the stamps. */
    final long directOverlaps;

    Measurement(long ops, long windowNanos, long[] latencies, long[] enters, long[] exits, long directOverlaps) {
        this.ops = ops;
        this.windowNanos = windowNanos;
        this.latencies = latencies;
        this.enters = enters;
        this.exits = exits;
        this.directOverlaps = directOverlaps;
    }

    /** The same figures without the critical sections, for what is not a lock (W5's floors). */
    Measurement withoutOverlapCheck() {
        return new Measurement(ops, windowNanos, latencies, new long[0], new long[0], 0);
    }

    /** Sums periods of the same implementation (the interleaved rounds). */
    static Measurement merge(List<Measurement> parts) {
        long ops = 0;
        long nanos = 0;
        long direct = 0;
        LongList lat = new LongList(1024);
        LongList en = new LongList(1024);
        LongList ex = new LongList(1024);
        for (Measurement m : parts) {
            ops += m.ops;
            nanos += m.windowNanos;
            direct += m.directOverlaps;
            lat.addAll(m.latencies);
            en.addAll(m.enters);
            ex.addAll(m.exits);
        }
        return new Measurement(ops, nanos, lat.toArray(), en.toArray(), ex.toArray(), direct);
    }

    /** Joins what several processes measured over the same window (W3's workers in one round). */
    static Measurement concurrent(List<Measurement> parts) {
        Measurement sum = merge(parts);
        long window = 0;
        for (Measurement m : parts) {
            window = Math.max(window, m.windowNanos);
        }
        return new Measurement(sum.ops, window, sum.latencies, sum.enters, sum.exits, sum.directOverlaps);
    }

    double opsPerSecond() {
        return windowNanos == 0 ? 0 : ops * 1e9 / windowNanos;
    }

    /** The {@code q}-quantile latency in microseconds (nearest rank), or NaN without samples. */
    double percentileMicros(double q) {
        if (latencies.length == 0) {
            return Double.NaN;
        }
        long[] sorted = latencies.clone();
        Arrays.sort(sorted);
        int rank = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank))] / 1_000.0;
    }

    /**
     * Counts critical sections that began before an earlier-begun one had ended: zero when mutual
     * exclusion held. Sections of different rounds never overlap in time, so the merged stamps can
     * be checked at once.
     */
    long overlaps() {
        int n = enters.length;
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> Long.compare(enters[a], enters[b]));
        long bad = 0;
        long maxExit = Long.MIN_VALUE;
        for (int k = 0; k < n; k++) {
            int i = order[k];
            if (k > 0 && enters[i] - maxExit < 0) {
                bad++;
            }
            if (k == 0 || exits[i] - maxExit > 0) {
                maxExit = exits[i];
            }
        }
        return bad + directOverlaps;
    }

    /** Collects per-thread samples into one measurement. */
    static final class Collector {
        private final List<LongList[]> threads = new ArrayList<>();
        private long ops;
        private long direct;

        /** Registers one thread's lists: latencies, enters, exits. */
        synchronized LongList[] newThread(int capacity) {
            LongList[] lists = {new LongList(capacity), new LongList(capacity), new LongList(capacity)};
            threads.add(lists);
            return lists;
        }

        synchronized void addOps(long n, long directOverlaps) {
            ops += n;
            direct += directOverlaps;
        }

        synchronized Measurement build(long windowNanos) {
            LongList lat = new LongList(1024);
            LongList en = new LongList(1024);
            LongList ex = new LongList(1024);
            for (LongList[] t : threads) {
                lat.addAll(t[0].toArray());
                en.addAll(t[1].toArray());
                ex.addAll(t[2].toArray());
            }
            return new Measurement(ops, windowNanos, lat.toArray(), en.toArray(), ex.toArray(), direct);
        }
    }
}
