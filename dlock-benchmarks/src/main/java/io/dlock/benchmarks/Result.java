package io.dlock.benchmarks;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One row of the report: one implementation in one workload.
 *
 * @param workload {@code W1}, {@code W2}, {@code W3}, {@code W4} or {@code COST}
 * @param impl the implementation
 * @param primary the figure ratios are taken on: operations per second for W1 to W4 (W4: locks
 *     acquired and released per second), requests per cycle for COST
 * @param ops operations counted (cycles, hand-offs or locks)
 * @param seconds the measured time
 * @param p50us median latency in microseconds (W1: the cycle; W2, W3: the wait), or NaN
 * @param p99us 99th percentile latency in microseconds, or NaN
 * @param overlaps critical sections that overlapped another one: must be 0
 * @param extra further figures by name (W4: bytes per held lock; COST: the command breakdown)
 */
record Result(
        String workload,
        LockImpl impl,
        double primary,
        long ops,
        double seconds,
        double p50us,
        double p99us,
        long overlaps,
        Map<String, Object> extra) {

    static Result of(String workload, LockImpl impl, Measurement m) {
        return new Result(
                workload,
                impl,
                m.opsPerSecond(),
                m.ops,
                m.windowNanos / 1e9,
                m.percentileMicros(0.50),
                m.percentileMicros(0.99),
                m.overlaps(),
                new LinkedHashMap<>());
    }

    /** Whether a larger primary figure is better (false for COST, where fewer requests win). */
    boolean higherIsBetter() {
        return !workload.equals("COST");
    }
}
