package io.dlock.spi;

/**
 * Thrown (as the failure of a stage) by a protocol when a waiting entry disappeared from the
 * backend without being released, for example because its session expired. The engine reacts by
 * standing in the queue again, within the caller's deadline.
 */
public final class EntryLostException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param entry the entry that vanished
     * @param reason why
     */
    public EntryLostException(QueueEntry entry, String reason) {
        super("queue entry " + entry.key() + " of lock '" + entry.lockName() + "' vanished: " + reason);
    }
}
