package io.dlock.spi;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Where an entry stands: either granted, or waiting.
 *
 * @param entry the entry
 * @param grant the grant if the entry holds the lock, else null
 * @param predecessor what to wait for, in the backend's terms (for locks: the key of the entry
 *     ahead), else null
 */
public record Position(QueueEntry entry, @Nullable Grant grant, @Nullable String predecessor) {

    /** Checks that exactly one of grant and predecessor is set. */
    public Position {
        Objects.requireNonNull(entry, "entry");
        if ((grant == null) == (predecessor == null)) {
            throw new IllegalArgumentException(
                    "a position is either granted or waiting: " + grant + ", " + predecessor);
        }
    }

    /**
     * A granted position.
     *
     * @param grant the grant
     * @return the position
     */
    public static Position granted(Grant grant) {
        return new Position(grant.entry(), grant, null);
    }

    /**
     * A waiting position.
     *
     * @param entry the entry
     * @param predecessor the key of the entry it waits for
     * @return the position
     */
    public static Position waiting(QueueEntry entry, String predecessor) {
        return new Position(entry, null, predecessor);
    }

    /**
     * Whether the entry holds the lock.
     *
     * @return true if granted
     */
    public boolean isGranted() {
        return grant != null;
    }
}
