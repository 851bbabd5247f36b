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
}
