package io.dlock.spring.boot.leader;

import io.dlock.Lease;
import org.springframework.context.ApplicationEvent;

/**
 * This instance was elected leader of an election that {@link LeaderElections} runs. Published on
 * the lock client's listener thread (return quickly; hand long work to an executor), before any
 * {@link LeaderRevokedEvent} of the same term.
 *
 * <p>Thread-safety: immutable.
 */
public final class LeaderElectedEvent extends ApplicationEvent {
    private static final long serialVersionUID = 1L;

    private final String election;
    private final transient Lease term;

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
        super(source);
        this.election = election;
        this.term = term;
    }

    /**
     * The election's name.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the name
     */
    public String election() {
        return election;
    }

    /**
     * The term that began: its fencing token is the term number.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the term
     */
    public Lease term() {
        return term;
    }

    @Override
    public String toString() {
        return "LeaderElectedEvent[" + election + ", term " + term.fencingToken() + "]";
    }
}
