package io.dlock.cli.internal.torture;

/**
 * One injected fault and how long the lock took to become usable again.
 *
 * @param kind what was injected
 * @param target the worker's name, or {@code server}
 * @param detail what exactly, for the log ({@code 2.8 s while holding}, {@code both ways 1.2 s})
 * @param atMillis when it started, in ms since the workers were ready
 * @param faultMillis how long the fault lasted until it cleared (0 for a kill)
 * @param blockedMillis from the start of the fault until a write with a newer grant was accepted:
 *     how long the fault kept the other workers from the lock (for a holder paused past its session,
 *     about the session timeout); -1 if that did not happen
 * @param recoveryMillis from the moment the fault cleared until a write with a newer grant was
 *     accepted; -1 if that did not happen within the observation window
 * @param boundMillis the recovery bound (session timeout plus margin)
 * @param cutShort the next fault began before this one's recovery was seen and before its bound
 *     ran out (back-to-back faults), so its recovery is reported but not judged
 */
public record FaultRecord(
        FaultKind kind,
        String target,
        String detail,
        long atMillis,
        long faultMillis,
        long blockedMillis,
        long recoveryMillis,
        long boundMillis,
        boolean cutShort) {

    /** A fault followed by a wait for its recovery (never cut short). */
    public FaultRecord(
            FaultKind kind,
            String target,
            String detail,
            long atMillis,
            long faultMillis,
            long blockedMillis,
            long recoveryMillis,
            long boundMillis) {
        this(kind, target, detail, atMillis, faultMillis, blockedMillis, recoveryMillis, boundMillis, false);
    }

    /**
     * Returns whether the lock was usable again within the bound.
     *
     * @return true if recovered in time
     */
    public boolean recoveredInTime() {
        return recoveryMillis >= 0 && recoveryMillis <= boundMillis;
    }

    /**
     * Returns whether this fault counts against the run: it did not recover in time, and was not
     * cut short by the next one.
     *
     * @return true if the run fails for it
     */
    public boolean failed() {
        return !recoveredInTime() && !cutShort;
    }
}
