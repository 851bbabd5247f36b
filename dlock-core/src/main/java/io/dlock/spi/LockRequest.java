package io.dlock.spi;

import org.jspecify.annotations.Nullable;

/**
 * One acquisition's request to a backend.
 *
 * @param lockName the lock's (or semaphore's) name, validated by the engine
 * @param acquisitionId a random id unique to this acquisition, embedded in the backend entry
 * @param mode what is asked for
 * @param permits how many permits ({@link LockMode#SEMAPHORE}); 1 otherwise
 * @param maxPermits the semaphore's total; every client of one semaphore must agree on it; 1
 *     otherwise
 * @param grantedDespite for {@link LockMode#READ}: the key of this client's own granted write entry,
 *     which does not block the read (a downgrade); else null
 */
public record LockRequest(
        String lockName,
        String acquisitionId,
        LockMode mode,
        int permits,
        int maxPermits,
        @Nullable String grantedDespite) {

    /** Checks the permits. */
    public LockRequest {
        if (permits < 1 || permits > maxPermits) {
            throw new IllegalArgumentException("permits " + permits + " not within 1.." + maxPermits);
        }
    }

    /**
     * An exclusive-lock request.
     *
     * @param lockName the lock's name
     * @param acquisitionId the acquisition's id
     * @return the request
     */
    public static LockRequest exclusive(String lockName, String acquisitionId) {
        return new LockRequest(lockName, acquisitionId, LockMode.EXCLUSIVE, 1, 1, null);
    }
}
