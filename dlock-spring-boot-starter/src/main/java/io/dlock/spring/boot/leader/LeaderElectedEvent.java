package io.dlock.spring.boot.leader;

import io.dlock.Lease;

/**
 * This instance was elected leader of an election that {@link LeaderElections} runs. Published on
 * the lock client's listener thread (return quickly; hand long work to an executor), before any
 * {@link LeaderRevokedEvent} of the same term.
 *
 * <p>Thread-safety: immutable.
 */
public final class LeaderElectedEvent extends LeaderEvent {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the event.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param source the elections that published it
     * @param election the election's name
     * @param term the new term
     */
    public LeaderElectedEvent(LeaderElections source, String election, Lease term) {
        super(source, election, term);
    }
}
