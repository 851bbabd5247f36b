package io.dlock;

import java.time.Duration;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * One candidate of this client for a role that one process at a time fills: a leader election.
 * Obtain one with {@link LockClient#leaderElection(String)}, register listeners, then {@link
 * #start()}:
 *
 * <pre>{@code
 * LeaderElection election = client.leaderElection("orders-scheduler")
 *         .onElected(term -> scheduler.startAt(term.fencingToken()))
 *         .onRevoked(term -> scheduler.stop())
 *         .start();
 * // ... later
 * election.close();
 * }</pre>
 *
 * <p>A <em>term</em> is a {@link Lease} owned by no thread: its {@link Lease#fencingToken()} is the
 * term number, strictly increasing per election name across all candidates and clients, so a
 * resource that refuses lower tokens refuses a deposed leader. Closing the term gives it up; the
 * candidate then rejoins the election at the back of the queue, unless the election is closed. A
 * term that is lost (the backend can no longer promise it) ends the same way, and the candidate
 * rejoins too. {@link #onRevoked} runs exactly once per term, before any later {@link #onElected}
 * of this candidate.
 *
 * <p>An election is the backend's exclusive lock on a name in a namespace of its own (see {@link
 * LockClient#leaderElection(String)}), so every guarantee of the lock (fencing, crash release,
 * lost-lock detection, FIFO order where the backend queues) applies to terms.
 *
 * <p>Thread-safety: safe for use from any thread. Listeners of one election run one at a time, in
 * the order the events happened, on the client's listener thread (the one {@link Lease#onLost}
 * listeners use): return quickly and hand long work to an executor of your own.
 */
public interface LeaderElection extends AutoCloseable {

    /**
     * The election's name.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the name given to {@link LockClient#leaderElection(String)}
     */
    String name();

    /**
     * Registers a listener that runs each time this candidate is elected, with the new term. A
     * listener registered while this candidate leads is not called for the current term; ask
     * {@link #leadership()}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: a null listener is an
     * {@link IllegalArgumentException}, nothing registered. A listener that throws, even an {@link
     * Error}, is logged and does not stop the others or the election.
     *
     * @param listener receives the term that starts
     * @return this election
     * @throws IllegalArgumentException if {@code listener} is null
     */
    LeaderElection onElected(Consumer<Lease> listener);

    /**
     * Registers a listener that runs once when a term of this candidate ends: lost, given up by
     * closing the term, or ended by {@link #close()}. It runs before any later {@link #onElected}
     * listener of this candidate; the term is already invalid when it runs.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: a null listener is an
     * {@link IllegalArgumentException}, nothing registered. A listener that throws, even an {@link
     * Error}, is logged and does not stop the others or the election.
     *
     * @param listener receives the term that ended
     * @return this election
     * @throws IllegalArgumentException if {@code listener} is null
     */
    LeaderElection onRevoked(Consumer<Lease> listener);

    /**
     * Joins the election: the candidate queues once, behind the candidates already waiting, and
     * stays a candidate until {@link #close()}. Calling it again does nothing.
     *
     * <p>Blocking: never (the queueing happens on the client's threads). Thread-safety: safe from any
     * thread. On failure: a backend failure while queueing is retried with the client's {@link
     * LockOptions#retryPolicy()} back-off for as long as the election is open (logged once per
     * outage at WARN); it is never thrown here.
     *
     * @return this election
     * @throws IllegalStateException if the election or its client is closed
     */
    LeaderElection start();

    /**
     * This candidate's current term, if it leads now and the term is valid.
     *
     * <p>Blocking: never (no server round trip). Thread-safety: safe from any thread. On failure:
     * cannot fail.
     *
     * @return the valid current term, or empty
     */
    Optional<Lease> leadership();

    /**
     * Waits until this candidate leads, up to {@code wait}.
     *
     * <p>Blocking: up to {@code wait}. Thread-safety: safe from any thread. On failure: an interrupt
     * ends the wait; the candidate stays in the election either way.
     *
     * @param wait how long to wait; {@link Duration#ZERO} answers at once, as {@link #leadership()}
     * @return the valid current term, or empty if this candidate did not lead within {@code wait}
     *     (or the election was closed)
     * @throws IllegalArgumentException if {@code wait} is null or negative; nothing changed
     * @throws InterruptedException if the thread is interrupted while waiting
     */
    Optional<Lease> awaitLeadership(Duration wait) throws InterruptedException;

    /**
     * Who leads this election now, read from the server. Any client may ask, whether this {@link
     * LeaderElection} was started (a candidate) or not (an observer): {@code
     * client.leaderElection("scheduler").currentLeader()} joins nothing.
     *
     * <p>Blocking: one read of the server, at most about the client's connect timeout. Thread-safety:
     * safe from any thread. On failure: throws; nothing is changed on the server.
     *
     * <p>The default implementation throws {@link UnsupportedOperationException}; every election
     * dlock returns overrides it.
     *
     * @return the leader and its term, or empty while nobody leads (between terms, or before any
     *     candidate started)
     * @throws LockBackendException if the server cannot be read
     * @throws UnsupportedOperationException if the backend offers no way to read its locks
     */
    default Optional<Leader> currentLeader() {
        throw new UnsupportedOperationException(getClass().getName() + " cannot read who leads");
    }

    /**
     * Leaves the election: withdraws the queued candidate, or ends the current term (its {@link
     * #onRevoked} listeners run once, on the listener thread) and releases it so that the next
     * candidate is elected. Closing again does nothing; so does closing a never started election.
     *
     * <p>Blocking: until the backend confirms the release or withdrawal, or the client's connect
     * timeout passes. Thread-safety: safe from any thread, including a listener. On failure: never
     * throws for backend failures; an entry the backend did not confirm removing is retried in the
     * background or removed by the backend's crash-release bound.
     */
    @Override
    void close();
}
