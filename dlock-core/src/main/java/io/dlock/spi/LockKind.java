package io.dlock.spi;

/** Which primitive a lock name is used as; one name may be used as several, each its own queue. */
public enum LockKind {
    /** An exclusive lock ({@code LockClient.lock}). */
    EXCLUSIVE,
    /** A read-write lock ({@code LockClient.readWriteLock}): readers and writers share one queue. */
    READ_WRITE,
    /** A semaphore ({@code LockClient.semaphore}). */
    SEMAPHORE
}
