package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.jdbc.SharedQueue.Entry;
import io.dlock.jdbc.SharedQueue.Request;
import io.dlock.spi.LockMode;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The read-write and semaphore rules on queue rows, without a database. */
class SharedQueueTest {
    private static Entry held(String id, char kind, int permits, long seq) {
        return new Entry(id, "c", kind, permits, 3, seq * 10, seq, 1_000);
    }

    private static Entry waiting(String id, char kind, int permits, long seq) {
        return new Entry(id, "c", kind, permits, 3, 0, seq, 1_000);
    }

    private static Request read() {
        return new Request("rw/x", 'R', 1, 1, null);
    }

    private static Request write() {
        return new Request("rw/x", 'W', 1, 1, null);
    }

    @Test
    void fits_readBehindReaders_grantedWriteBehindReaders_not() {
        List<Entry> q = List.of(held("r1", 'R', 1, 1), held("r2", 'R', 1, 2));
        assertThat(SharedQueue.fits(q, "new", read(), true)).isTrue();
        assertThat(SharedQueue.fits(q, "new", write(), true)).isFalse();
        assertThat(SharedQueue.fits(List.of(), "new", write(), true)).isTrue();
    }

    @Test
    void fits_readBehindQueuedWriter_waitsWhenFairOnly() {
        List<Entry> q = List.of(held("r1", 'R', 1, 1), waiting("w", 'W', 1, 2));
        assertThat(SharedQueue.fits(q, "new", read(), true)).isFalse();
        assertThat(SharedQueue.fits(q, "new", read(), false)).isTrue();
        // An entry already queued ahead of the writer is not blocked by it.
        List<Entry> ahead = List.of(held("r1", 'R', 1, 1), waiting("r2", 'R', 1, 2), waiting("w", 'W', 1, 3));
        assertThat(SharedQueue.fits(ahead, "r2", read(), true)).isTrue();
    }

    @Test
    void fits_downgrade_passesOwnWriteAndQueuedWriters() {
        List<Entry> q = List.of(held("mine", 'W', 1, 1), waiting("w2", 'W', 1, 2));
        Request downgrade = new Request("rw/x", 'R', 1, 1, "mine");
        assertThat(SharedQueue.fits(q, "new", downgrade, true)).isTrue();
        assertThat(SharedQueue.fits(q, "new", read(), true)).isFalse();
        // Not a downgrade once the write is no longer granted.
        List<Entry> gone = List.of(waiting("w2", 'W', 1, 2), held("other", 'W', 1, 3));
        assertThat(SharedQueue.fits(gone, "new", downgrade, true)).isFalse();
    }

    @Test
    void fits_semaphore_countsPermitsHeldAndAhead() {
        Request two = new Request("s/p", 'S', 2, 3, null);
        assertThat(SharedQueue.fits(List.of(held("a", 'S', 1, 1)), "new", two, true))
                .isTrue();
        assertThat(SharedQueue.fits(List.of(held("a", 'S', 2, 1)), "new", two, true))
                .isFalse();
        List<Entry> q = List.of(held("a", 'S', 1, 1), waiting("b", 'S', 1, 2));
        assertThat(SharedQueue.fits(q, "new", two, true)).isFalse(); // b is ahead
        assertThat(SharedQueue.fits(q, "new", two, false)).isTrue();
    }

    @Test
    void grantable_fairStopsAtFirstThatDoesNotFit_unfairWakesEveryFit() {
        List<Entry> q =
                new ArrayList<>(List.of(held("r", 'R', 1, 1), waiting("w", 'W', 1, 2), waiting("r2", 'R', 1, 3)));
        assertThat(SharedQueue.grantable(q, true)).isEmpty();
        assertThat(SharedQueue.grantable(q, false))
                .extracting(Entry::acquisition)
                .containsExactly("r2");
        q.remove(0);
        assertThat(SharedQueue.grantable(q, true))
                .extracting(Entry::acquisition)
                .containsExactly("w");
        List<Entry> readers = List.of(waiting("a", 'R', 1, 1), waiting("b", 'R', 1, 2), waiting("w", 'W', 1, 3));
        assertThat(SharedQueue.grantable(readers, true))
                .extracting(Entry::acquisition)
                .containsExactly("a", "b");
        List<Entry> permits = List.of(held("a", 'S', 2, 1), waiting("b", 'S', 1, 2), waiting("c", 'S', 1, 3));
        assertThat(SharedQueue.grantable(permits, true))
                .extracting(Entry::acquisition)
                .containsExactly("b");
    }

    @Test
    void keys_perFamily_neverAnExclusiveName() {
        assertThat(SharedQueue.key(LockMode.READ, "x")).isEqualTo("rw/x");
        assertThat(SharedQueue.key(LockMode.WRITE, "x")).isEqualTo("rw/x");
        assertThat(SharedQueue.key(LockMode.SEMAPHORE, "x")).isEqualTo("s/x");
        assertThat(SharedQueue.isShared("rw/x#a1")).isTrue();
        assertThat(SharedQueue.isShared("x#a1")).isFalse();
        assertThat(SharedQueue.keyOf("s/a.b#a1")).isEqualTo("s/a.b");
        assertThat(SharedQueue.acquisitionOf("rw/x#a1")).isEqualTo("a1");
        assertThatThrownBy(() -> SharedQueue.key(LockMode.EXCLUSIVE, "x")).isInstanceOf(IllegalArgumentException.class);
    }
}
