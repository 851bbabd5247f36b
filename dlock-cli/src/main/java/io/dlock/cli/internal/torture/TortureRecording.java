package io.dlock.cli.internal.torture;

import io.dlock.testkit.FencedStore;
import java.util.List;
import java.util.Map;

/**
 * What a torture run saw, for its report: the store (every access, in order), when the fault
 * schedule began and the run's workload ended, the faults, and each worker's output lines.
 *
 * @param store the fenced store, complete
 * @param faultPhaseStartNanos {@link System#nanoTime()} when the workers were ready (faults' {@code
 *     atMillis} count from here)
 * @param endNanos when the workload ended
 * @param faults the faults, in order
 * @param workerLines every worker's output, by worker name, in start order
 */
public record TortureRecording(
        FencedStore store,
        long faultPhaseStartNanos,
        long endNanos,
        List<FaultRecord> faults,
        Map<String, List<String>> workerLines) {}
