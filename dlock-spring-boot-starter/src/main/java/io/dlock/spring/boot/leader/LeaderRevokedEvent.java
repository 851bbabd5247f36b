package io.dlock.spring.boot.leader;

import io.dlock.Lease;

/**
 * This instance's term of an election that {@link LeaderElections} runs ended: lost (the backend
 * could no longer promise it), given up, or the election closed with the context. Published once
 * per term, after its {@link LeaderElectedEvent}, on the lock client's listener thread; the term is
 * already invalid: stop the leader's work.
 *
 * <p>Thread-safety: immutable.
 */
public final class LeaderRevokedEvent extends LeaderEvent {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the event.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param source the elections that published it
     * @param election the election's name
     * @param term the term that ended
     */
    public LeaderRevokedEvent(LeaderElections source, String election, Lease term) {
        super(source, election, term);
    }
}
