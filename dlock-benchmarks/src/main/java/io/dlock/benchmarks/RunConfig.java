package io.dlock.benchmarks;

import java.nio.file.Path;
import java.time.Duration;

/**
 * The knobs of one run, validated by {@link BenchCommand}.
 *
 * @param warmup the warm-up of each implementation before its first measured period
 * @param warmups workloads' own warm-ups, in place of {@code warmup}
 * @param duration one measured period
 * @param rounds how many measured periods each implementation gets, interleaved with the others'
 * @param w2Threads threads on one lock in W2
 * @param w3Jvms worker JVMs in W3
 * @param w3Threads threads per worker JVM in W3
 * @param w4Locks distinct locks held at once in W4
 * @param w4Threads threads that acquire (and release) W4's locks, each an equal share
 * @param costCycles uncontended cycles counted for the server cost
 * @param w5Threads threads of one JVM in W5
 * @param w5Names lock names W5's threads choose from
 * @param w6Threads virtual threads in W6
 * @param w6Locks locks W6's virtual threads choose from
 * @param w6Java the {@code java} of a JDK 21+ that runs W6's worker
 * @param scaleJvms SCALE's counts of worker JVMs, one cell each
 * @param scaleNames SCALE's counts of lock names, one cell each
 * @param scaleThreads threads per worker JVM in SCALE
 */
record RunConfig(
        Duration warmup,
        java.util.Map<String, Duration> warmups,
        Duration duration,
        int rounds,
        int w2Threads,
        int w3Jvms,
        int w3Threads,
        int w4Locks,
        int w4Threads,
        int costCycles,
        int w5Threads,
        int w5Names,
        int w6Threads,
        int w6Locks,
        Path w6Java,
        java.util.List<Integer> scaleJvms,
        java.util.List<Integer> scaleNames,
        int scaleThreads) {

    /** The warm-up of each implementation in {@code workload}: its own, else {@link #warmup}. */
    Duration warmup(String workload) {
        return warmups.getOrDefault(workload, warmup);
    }
}
