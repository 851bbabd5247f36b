package io.dlock.memcached;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.Capability;
import io.dlock.LockClient;
import io.dlock.testkit.PrimitivesContract;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Multi-locks and the non-reentrant mutex on memcached: the testkit's contract. Read-write locks and
 * semaphores are not offered (see the README): each of the contract's tests for them is replaced by
 * the check that the capability is absent and the feature refused with a clear exception, and that
 * nothing reached the server.
 */
class MemcachedPrimitivesIT extends MemcachedTestSupport implements PrimitivesContract {

    @Override
    public List<String> readWriteEntries(String lock) {
        return List.of();
    }

    @Override
    public List<String> semaphoreEntries(String lock) {
        return List.of();
    }

    @Override
    public List<String> serverState() {
        return List.copyOf(keysUnderPrefix());
    }

    /** Deletes the lock's key, as an eviction, a flush or an operator would. */
    @Override
    public void dropHolder(String lock) {
        server.command("md " + prefix + ":l:" + lock);
    }

    private void readWriteIsRefused() {
        LockClient c = newClient();
        assertThat(c.capabilities()).doesNotContain(Capability.READ_WRITE);
        assertThatThrownBy(() -> c.readWriteLock("rw"))
                .isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("READ_WRITE")
                .hasMessageContaining("memcached");
        assertThat(serverState()).isEmpty();
    }

    private void semaphoreIsRefused() {
        LockClient c = newClient();
        assertThat(c.capabilities()).doesNotContain(Capability.SEMAPHORE);
        assertThatThrownBy(() -> c.semaphore("s", 3))
                .isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("SEMAPHORE")
                .hasMessageContaining("memcached");
        assertThat(serverState()).isEmpty();
    }

    /** Not applicable: no READ_WRITE on memcached. */
    @Test
    @Override
    public void readLock_twoClients_holdAtOnceWithIncreasingTokens() {
        readWriteIsRefused();
    }

    /** Not applicable: no READ_WRITE on memcached. */
    @Test
    @Override
    public void writeLock_held_excludesReadersAndWriters() {
        readWriteIsRefused();
    }

    /** Not applicable: no READ_WRITE on memcached. */
    @Test
    @Override
    public void writerQueuedBehindReaders_grantedBeforeLaterReader() {
        readWriteIsRefused();
    }

    /** Not applicable: no READ_WRITE on memcached. */
    @Test
    @Override
    public void writeLock_twoWritersTwoReaders_writersExcludeEveryone() {
        readWriteIsRefused();
    }

    /** Not applicable: no READ_WRITE on memcached. */
    @Test
    @Override
    public void writeLock_downgradeToRead_keepsOthersOutUntilWriteReleased() {
        readWriteIsRefused();
    }

    /** Not applicable: no READ_WRITE on memcached. */
    @Test
    @Override
    public void writeLock_downgradeWithAWriterQueued_isGrantedAtOnce() {
        readWriteIsRefused();
    }

    /** Not applicable: no READ_WRITE on memcached. */
    @Test
    @Override
    public void readLock_upgradeToWrite_failsAtOnceAndKeepsRead() {
        readWriteIsRefused();
    }

    /** Not applicable: no SEMAPHORE on memcached. */
    @Test
    @Override
    public void semaphore_threePermitsTenClients_neverMoreThanThreeHolders() {
        semaphoreIsRefused();
    }

    /** Not applicable: no SEMAPHORE on memcached. */
    @Test
    @Override
    public void semaphore_severalPermitsPerLease_countTowardsTotal() {
        semaphoreIsRefused();
    }

    /** Not applicable: no SEMAPHORE on memcached. */
    @Test
    @Override
    public void semaphore_waiterForTwoPermits_grantedWhenTwoComeBack() {
        semaphoreIsRefused();
    }

    /** Not applicable: no SEMAPHORE on memcached. */
    @Test
    @Override
    public void semaphore_killedHolder_permitsComeBack() {
        semaphoreIsRefused();
    }

    /** Not applicable: no SEMAPHORE on memcached. */
    @Test
    @Override
    public void semaphore_badInput_clearErrorsAndNothingChanged() {
        semaphoreIsRefused();
    }

    /** Not applicable: no SEMAPHORE on memcached. */
    @Test
    @Override
    public void semaphore_acquireAsync_timesOutCleanly_thenGrantedWhenPermitsComeBack() {
        semaphoreIsRefused();
    }

    /** Not applicable: no SEMAPHORE on memcached. */
    @Test
    @Override
    public void semaphore_acquireAsync_cancelled_leavesNoEntry() {
        semaphoreIsRefused();
    }

    /** Not applicable: no SEMAPHORE on memcached. */
    @Test
    @Override
    public void semaphore_acquireAsync_sixClients_neverMoreThanTwoHolders() {
        semaphoreIsRefused();
    }

    /** Not applicable: no SEMAPHORE on memcached. */
    @Test
    @Override
    public void semaphore_acquireAsync_badInput_thrownAndNothingChanged() {
        semaphoreIsRefused();
    }
}
