package io.dlock.spi;

/** What an acquisition asks for. A backend only sees entries of the same family as its own. */
public enum LockMode {
    /** An exclusive lock: granted when first in the queue. */
    EXCLUSIVE,
    /** The shared side of a read-write lock: granted when no writer is ahead. */
    READ,
    /** The exclusive side of a read-write lock: granted when first among readers and writers. */
    WRITE,
    /** Permits of a semaphore: granted when the permits ahead plus its own fit the total. */
    SEMAPHORE
}
