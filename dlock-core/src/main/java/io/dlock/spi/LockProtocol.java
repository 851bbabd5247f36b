package io.dlock.spi;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * How a backend's queues are entered, granted, awaited and left, for every {@link LockMode} the
 * backend declares in its capabilities. Every method is non-blocking (except where a caller that
 * only waits allows otherwise: {@link #enqueue(LockRequest, boolean)}, {@link #release(QueueEntry,
 * boolean)}); stages complete on the backend client's threads, or on the caller's when the work ran
 * there, and must not be blocked by the engine.
 *
 * <p>Failures are reported as exceptionally completed stages: {@link EntryLostException} when an
 * entry vanished, {@link io.dlock.LockBackendException} for everything the backend refused or
 * could not do within its retry policy.
 */
public interface LockProtocol {

    /**
     * Creates an entry for the request in the lock's queue and reports where it stands. If the
     * reply is lost in transit, the implementation finds its own entry again (by the acquisition id)
     * instead of creating a second one.
     *
     * @param request what is asked for
     * @return the entry's position: granted, or waiting
     */
    CompletionStage<Position> enqueue(LockRequest request);

    /**
     * {@link #enqueue(LockRequest)}, told whether the calling thread does nothing but wait for the
     * returned stage (the thread of a blocking {@code acquire} or {@code tryAcquire}). A protocol
     * whose I/O blocks (JDBC) may then do the work on the calling thread instead of handing it to
     * one of its own threads and back: two thread hand-offs fewer per round trip.
     *
     * <p>Blocking: with {@code callerWaits} true, it may block the caller, for at most the client's
     * connect timeout per round trip (so a dead server cannot hold the caller longer than the
     * engine's own bound on the wait); otherwise never. Thread-safety: as {@link
     * #enqueue(LockRequest)}. Failure: as {@link #enqueue(LockRequest)}, reported through the
     * stage, never thrown. The default ignores the hint.
     *
     * @param request what is asked for
     * @param callerWaits whether the calling thread only waits for the returned stage
     * @return the entry's position: granted, or waiting
     */
    default CompletionStage<Position> enqueue(LockRequest request, boolean callerWaits) {
        return enqueue(request);
    }

    /**
     * Completes when what {@code waiting} waits for has changed (for locks: its predecessor has
     * gone, and only this entry is woken by that departure), with the entry's new position.
     *
     * @param waiting a waiting position returned by {@link #enqueue} or this method
     * @return the new position (granted, or waiting behind another predecessor)
     */
    CompletionStage<Position> awaitTurn(Position waiting);

    /**
     * Removes an entry, held or waiting. Retried through connection drops until the entry is gone
     * or its session has ended; a missing entry counts as removed.
     *
     * @param entry the entry to remove
     * @return completes once the entry is gone
     */
    CompletionStage<Void> release(QueueEntry entry);

    /**
     * {@link #release(QueueEntry)}, told whether the calling thread does nothing but wait for the
     * returned stage (the thread closing a lease). As with {@link #enqueue(LockRequest, boolean)},
     * a protocol whose I/O blocks may then do the first try on the calling thread.
     *
     * <p>Blocking: with {@code callerWaits} true, it may block the caller for at most the client's
     * connect timeout; retries after a failure never run on the caller. Otherwise never.
     * Thread-safety: as {@link #release(QueueEntry)}. Failure: as {@link #release(QueueEntry)}.
     * The default ignores the hint.
     *
     * @param entry the entry to remove
     * @param callerWaits whether the calling thread only waits for the returned stage
     * @return completes once the entry is gone
     */
    default CompletionStage<Void> release(QueueEntry entry, boolean callerWaits) {
        return release(entry);
    }

    /**
     * Finds an entry created for {@code acquisitionId} by this client's current session, for
     * cleaning up after an enqueue whose outcome is unknown.
     *
     * @param lockName the lock's name
     * @param acquisitionId the acquisition's id
     * @return the entry, or empty if this session has none
     */
    CompletionStage<Optional<QueueEntry>> findOwnEntry(String lockName, String acquisitionId);

    /**
     * Extends a grant whose validity is a lease ({@link Grant#validUntilNanos()} finite). The
     * engine calls it every third of the lease time while the lease is open, and again after a
     * failure until the grant runs out. Implementations must read the ticker <em>before</em>
     * sending, so the new validity never outlives the server's copy.
     *
     * <p>Failure: {@link EntryLostException} when the server no longer holds this grant (its
     * token is gone or replaced): the engine marks the lease lost at once. Any other failure is
     * treated as transient and retried while the old validity lasts.
     *
     * @param grant the grant to extend, as last returned by the protocol
     * @return the same grant with the validity the server now confirms; it replaces the old one even
     *     when earlier (a grant made with another client's longer lease is renewed for this client's)
     */
    default CompletionStage<Grant> renew(Grant grant) {
        return CompletableFuture.completedFuture(grant);
    }
}
