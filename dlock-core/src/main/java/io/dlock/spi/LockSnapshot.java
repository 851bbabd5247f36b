package io.dlock.spi;

import java.util.List;
import java.util.Objects;

/**
 * One lock's state as an inspection saw it: its holders and its waiters in queue order.
 *
 * <p>Thread-safety: immutable.
 *
 * @param name the lock's name
 * @param kind the primitive the name is used as
 * @param maxPermits a semaphore's total where the backend records it, 0 where it does not; 1 for
 *     locks
 * @param holders the granted entries, oldest first
 * @param waiters the waiting entries, first in line first
 */
public record LockSnapshot(
        String name, LockKind kind, int maxPermits, List<EntrySnapshot> holders, List<EntrySnapshot> waiters) {

    /** Copies the lists. */
    public LockSnapshot {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(kind, "kind");
        holders = List.copyOf(holders);
        waiters = List.copyOf(waiters);
    }
}
