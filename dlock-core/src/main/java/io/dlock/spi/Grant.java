package io.dlock.spi;

/**
 * The backend's confirmation that an entry holds the lock.
 *
 * @param entry the entry that was granted
 * @param fencingToken strictly increasing per lock name across all grants (a zxid, a counter, a
 *     revision)
 * @param validUntilNanos the ticker reading after which the grant is no longer guaranteed unless
 *     renewed, or {@link Long#MAX_VALUE} where validity is tied to a session instead
 */
public record Grant(QueueEntry entry, long fencingToken, long validUntilNanos) {}
