package io.dlock;

/**
 * What a backend can do, as reported by {@link LockClient#capabilities()}. A backend that lacks a
 * capability throws {@link UnsupportedOperationException} naming it when the feature is used; it
 * never silently weakens a guarantee.
 *
 * <p>Thread-safety: immutable.
 */
public enum Capability {
    /** Exclusive, reentrant locks ({@link LockClient#lock}). */
    EXCLUSIVE,
    /** Waiters are granted in order of arrival at the backend. */
    FAIR,
    /** Every grant carries a token that strictly increases per lock name ({@link Lease#fencingToken()}). */
    FENCING_TOKENS,
    /** Read-write locks ({@link LockClient#readWriteLock}). */
    READ_WRITE,
    /** Counting semaphores ({@link LockClient#semaphore}). */
    SEMAPHORE,
    /** All-or-nothing locks over several names ({@link LockClient#multiLock}). */
    MULTI_LOCK,
    /** A lease turns invalid and {@link Lease#onLost} fires when the backend stops guaranteeing it. */
    LOST_DETECTION,
    /** A holder that dies stops holding within a bounded time (ephemeral node, TTL, lease). */
    CRASH_RELEASE,
    /** A lease is kept alive in the background for as long as it is open. */
    RENEWAL,
    /** A waiter is woken only when it may proceed, not on every release (no thundering herd). */
    NO_HERD
}
