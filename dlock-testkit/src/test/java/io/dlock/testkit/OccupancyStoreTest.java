package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.testkit.OccupancyStore.Mode;
import org.junit.jupiter.api.Test;

class OccupancyStoreTest {

    @Test
    void readWrite_readersTogetherThenWriterAlone_safe() {
        OccupancyStore store = OccupancyStore.readWrite();
        assertThat(store.enter("r1", 1, Mode.READ, 1)).isTrue();
        assertThat(store.enter("r2", 2, Mode.READ, 1)).isTrue();
        assertThat(store.enter("r3", 3, Mode.READ, 1)).isTrue();
        store.leave("r1", 1);
        store.leave("r2", 2);
        store.leave("r3", 3);
        assertThat(store.enter("w", 4, Mode.WRITE, 1)).isTrue();
        store.leave("w", 4);
        OccupancyStore.Report r = store.report();
        assertThat(r.entries()).isEqualTo(4);
        assertThat(r.maxReaders()).isEqualTo(3);
        assertThat(r.violations()).isZero();
        assertThat(r.misuses()).isZero();
        assertThat(r.safe()).isTrue();
        assertThat(r.firstProblem()).isEmpty();
    }

    @Test
    void readWrite_writerEntersBesideAReader_caught() {
        OccupancyStore store = OccupancyStore.readWrite();
        store.enter("r", 1, Mode.READ, 1);
        assertThat(store.enter("w", 2, Mode.WRITE, 1)).isFalse();
        OccupancyStore.Report r = store.report();
        assertThat(r.violations()).isEqualTo(1);
        assertThat(r.safe()).isFalse();
        assertThat(r.firstProblem()).contains("client=w").contains("WRITE");
    }

    @Test
    void readWrite_overlappingWriters_caught() {
        OccupancyStore store = OccupancyStore.readWrite();
        store.enter("w1", 1, Mode.WRITE, 1);
        assertThat(store.enter("w2", 2, Mode.WRITE, 1)).isFalse();
        assertThat(store.report().violations()).isEqualTo(1);
    }

    @Test
    void readWrite_readerEntersBesideAWriter_caught() {
        OccupancyStore store = OccupancyStore.readWrite();
        store.enter("w", 1, Mode.WRITE, 1);
        assertThat(store.enter("r", 2, Mode.READ, 1)).isFalse();
        assertThat(store.report().violations()).isEqualTo(1);
    }

    @Test
    void semaphore_upToThePermits_safe_andOnePermitTooMany_caught() {
        OccupancyStore store = OccupancyStore.semaphore(3);
        assertThat(store.enter("a", 1, Mode.PERMITS, 2)).isTrue();
        assertThat(store.enter("b", 2, Mode.PERMITS, 1)).isTrue();
        assertThat(store.report().safe()).isTrue();
        assertThat(store.report().maxPermits()).isEqualTo(3);

        assertThat(store.enter("c", 3, Mode.PERMITS, 1)).isFalse();
        OccupancyStore.Report r = store.report();
        assertThat(r.violations()).isEqualTo(1);
        assertThat(r.maxPermits()).isEqualTo(4);
        assertThat(r.firstProblem()).contains("client=c").contains("PERMITS 1");

        store.leave("c", 3);
        store.leave("b", 2);
        assertThat(store.enter("d", 4, Mode.PERMITS, 1)).isTrue();
        assertThat(store.report().violations()).isEqualTo(1);
    }

    @Test
    void leaveWithoutEnter_andEnterTwice_areMisuses() {
        OccupancyStore store = OccupancyStore.semaphore(2);
        assertThat(store.leave("x", 1)).isFalse();
        store.enter("y", 2, Mode.PERMITS, 1);
        assertThat(store.enter("y", 2, Mode.PERMITS, 1)).isFalse();
        OccupancyStore.Report r = store.report();
        assertThat(r.misuses()).isEqualTo(2);
        assertThat(r.violations()).isZero();
        assertThat(r.safe()).isFalse();
        assertThat(r.firstProblem()).contains("left without being inside");
    }

    @Test
    void badInput_refusedAndNothingRecorded() {
        OccupancyStore rw = OccupancyStore.readWrite();
        assertThatThrownBy(() -> rw.enter("a", 1, Mode.PERMITS, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> rw.enter("a", 1, Mode.READ, 2)).isInstanceOf(IllegalArgumentException.class);
        OccupancyStore sem = OccupancyStore.semaphore(2);
        assertThatThrownBy(() -> sem.enter("a", 1, Mode.WRITE, 1)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> sem.enter("a", 1, Mode.PERMITS, 0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> OccupancyStore.semaphore(0)).isInstanceOf(IllegalArgumentException.class);
        assertThat(rw.report().entries()).isZero();
        assertThat(sem.report().entries()).isZero();
    }

    @Test
    void fencedReadWrite_newerWriterFencesOutAPausedReader_noViolation_andItsLeaveIsStale() {
        OccupancyStore store = OccupancyStore.fencedReadWrite();
        assertThat(store.admit("r1", 10, Mode.READ, 1)).isEqualTo(OccupancyStore.Admission.ADMITTED);
        assertThat(store.admit("r2", 11, Mode.READ, 1)).isEqualTo(OccupancyStore.Admission.ADMITTED);
        assertThat(store.exit("r2", 11)).isEqualTo(OccupancyStore.Exit.LEFT);
        // r1 paused past its lease; the lock granted a writer after it
        assertThat(store.admit("w", 12, Mode.WRITE, 1)).isEqualTo(OccupancyStore.Admission.ADMITTED);
        assertThat(store.exit("r1", 10)).isEqualTo(OccupancyStore.Exit.STALE);
        // a reader granted before the writer comes in late: stale
        assertThat(store.admit("r3", 11, Mode.READ, 1)).isEqualTo(OccupancyStore.Admission.STALE);
        // a writer granted before the latest grant: stale
        assertThat(store.admit("w0", 9, Mode.WRITE, 1)).isEqualTo(OccupancyStore.Admission.STALE);
        assertThat(store.exit("w", 12)).isEqualTo(OccupancyStore.Exit.LEFT);
        OccupancyStore.Report r = store.report();
        assertThat(r.entries()).isEqualTo(3);
        assertThat(r.violations()).isZero();
        assertThat(r.misuses()).isZero();
        assertThat(r.fencedOut()).isEqualTo(1);
        assertThat(r.staleRefused()).isEqualTo(3); // r1's leave, r3's and w0's entries
        assertThat(r.staleAccepted()).isZero();
        assertThat(r.maxReaders()).isEqualTo(2);
        assertThat(r.safe()).isTrue();
    }

    @Test
    void fencedReadWrite_twoWritersWithOneToken_violation() {
        OccupancyStore store = OccupancyStore.fencedReadWrite();
        store.admit("w1", 5, Mode.WRITE, 1);
        assertThat(store.admit("w2", 5, Mode.WRITE, 1)).isEqualTo(OccupancyStore.Admission.VIOLATION);
        assertThat(store.admit("r", 5, Mode.READ, 1)).isEqualTo(OccupancyStore.Admission.VIOLATION);
        OccupancyStore.Report r = store.report();
        assertThat(r.violations()).isEqualTo(2);
        assertThat(r.fencedOut()).isZero();
        assertThat(r.safe()).isFalse();
        assertThat(r.firstProblem()).contains("client=w2");
    }

    @Test
    void fencedSemaphore_overflowFencesOutTheOldest_andAnOldEntryIsStale() {
        OccupancyStore store = OccupancyStore.fencedSemaphore(2);
        assertThat(store.admit("a", 1, Mode.PERMITS, 1)).isEqualTo(OccupancyStore.Admission.ADMITTED);
        assertThat(store.admit("b", 2, Mode.PERMITS, 1)).isEqualTo(OccupancyStore.Admission.ADMITTED);
        assertThat(store.admit("c", 3, Mode.PERMITS, 1)).isEqualTo(OccupancyStore.Admission.ADMITTED);
        assertThat(store.exit("a", 1)).isEqualTo(OccupancyStore.Exit.STALE);
        assertThat(store.admit("d", 4, Mode.PERMITS, 2)).isEqualTo(OccupancyStore.Admission.ADMITTED);
        // b and c fenced out; an entry older than every holder inside does not fit: stale
        assertThat(store.admit("e", 3, Mode.PERMITS, 1)).isEqualTo(OccupancyStore.Admission.STALE);
        OccupancyStore.Report r = store.report();
        assertThat(r.entries()).isEqualTo(4);
        assertThat(r.fencedOut()).isEqualTo(3);
        assertThat(r.staleRefused()).isEqualTo(2);
        assertThat(r.maxPermits()).isEqualTo(2);
        assertThat(r.violations()).isZero();
        assertThat(r.safe()).isTrue();
    }

    @Test
    void unfencedSemaphore_overflowIsAViolation_andAnOldEntryCountsAsStaleAccepted() {
        OccupancyStore store = OccupancyStore.semaphore(1);
        store.admit("a", 5, Mode.PERMITS, 1);
        assertThat(store.admit("b", 4, Mode.PERMITS, 1)).isEqualTo(OccupancyStore.Admission.VIOLATION);
        OccupancyStore.Report r = store.report();
        assertThat(r.violations()).isEqualTo(1);
        assertThat(r.staleAccepted()).isEqualTo(1);
        assertThat(r.staleRefused()).isZero();
        assertThat(r.maxPermits()).isEqualTo(2);
    }

    @Test
    void fenced_badInput_refusedAndNothingRecorded() {
        OccupancyStore sem = OccupancyStore.fencedSemaphore(2);
        assertThatThrownBy(() -> sem.admit("a", 1, Mode.PERMITS, 3)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> OccupancyStore.fencedSemaphore(0)).isInstanceOf(IllegalArgumentException.class);
        assertThat(sem.report().entries()).isZero();
        assertThat(sem.isFenced()).isTrue();
        assertThat(sem.totalPermits()).isEqualTo(2);
        assertThat(OccupancyStore.readWrite().isFenced()).isFalse();
    }
}
