package io.dlock.spring.boot.leader;

import io.dlock.Lease;
import org.springframework.context.ApplicationEvent;

/**
 * A change of this instance's part in an election that {@link LeaderElections} runs: {@link
 * LeaderElectedEvent} or {@link LeaderRevokedEvent}. Listen to this type for both.
 *
 * <p>Thread-safety: immutable.
 */
public abstract class LeaderEvent extends ApplicationEvent {
    private static final long serialVersionUID = 1L;

    private final String election;
    private final transient Lease term;

    LeaderEvent(LeaderElections source, String election, Lease term) {
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
     * The term: its fencing token is the term number.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the term that began ({@link LeaderElectedEvent}) or ended ({@link LeaderRevokedEvent})
     */
    public Lease term() {
        return term;
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "[" + election + ", term " + term.fencingToken() + "]";
    }
}
