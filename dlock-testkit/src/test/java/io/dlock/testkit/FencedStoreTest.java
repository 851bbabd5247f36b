package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class FencedStoreTest {

    @Test
    void write_nothingYet_emptyState() {
        FencedStore store = new FencedStore();
        assertThat(store.highestToken()).isEqualTo(FencedStore.NO_TOKEN);
        assertThat(store.value()).isZero();
        assertThat(store.history()).isEmpty();
    }

    @Test
    void write_increasingAndEqualTokens_accepted() {
        FencedStore store = new FencedStore();
        assertThat(store.write("a", 5, 1)).isTrue();
        assertThat(store.write("a", 5, 2)).isTrue();
        assertThat(store.write("b", 9, 3)).isTrue();
        assertThat(store.highestToken()).isEqualTo(9);
        assertThat(store.value()).isEqualTo(3);
        assertThat(store.acceptedWrites()).isEqualTo(3);
        assertThat(store.rejectedWrites()).isZero();
    }

    @Test
    void write_staleToken_rejectedAndChangesNothing() {
        FencedStore store = new FencedStore();
        store.write("new", 10, 100);
        assertThat(store.write("old", 9, 999)).isFalse();
        assertThat(store.value()).isEqualTo(100);
        assertThat(store.highestToken()).isEqualTo(10);
        assertThat(store.rejectedWrites()).isEqualTo(1);
        assertThat(store.acceptedWrites()).isEqualTo(1);
        List<FencedStore.Write> history = store.history();
        assertThat(history).extracting(FencedStore.Write::client).containsExactly("new", "old");
        assertThat(history).extracting(FencedStore.Write::accepted).containsExactly(true, false);
        assertThat(history.get(1).token()).isEqualTo(9);
        assertThat(history.get(1).value()).isEqualTo(999);
        assertThat(history.get(1).nanoTime() - history.get(0).nanoTime()).isNotNegative();
    }

    @Test
    void write_concurrentWriters_countsAddUpAndAcceptedTokensNeverDecrease() throws Exception {
        FencedStore store = new FencedStore();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> futures = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                String client = "c" + t;
                int offset = t;
                futures.add(pool.submit(() -> {
                    for (int i = 0; i < 2_000; i++) {
                        store.write(client, i * 4L + offset, i);
                    }
                }));
            }
            for (Future<?> f : futures) {
                f.get(30, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(store.acceptedWrites() + store.rejectedWrites()).isEqualTo(8_000);
        List<FencedStore.Write> history = store.history();
        assertThat(history).hasSize(8_000);
        long highest = Long.MIN_VALUE;
        for (FencedStore.Write w : history) {
            assertThat(w.accepted()).as("%s", w).isEqualTo(w.token() >= highest);
            if (w.accepted()) {
                highest = w.token();
            }
        }
        assertThat(store.highestToken()).isEqualTo(highest);
    }

    @Test
    void read_staleTokenInFencedMode_rejectedAndRaisesNothing() {
        FencedStore store = FencedStore.fenced();
        assertThat(store.read("a", 5)).hasValue(0);
        assertThat(store.highestToken()).isEqualTo(5);
        assertThat(store.read("old", 4)).isEmpty();
        assertThat(store.rejectedReads()).isEqualTo(1);
        assertThat(store.highestToken()).isEqualTo(5);
        assertThat(store.accesses()).extracting(FencedStore.Access::accepted).containsExactly(true, false);
    }

    @Test
    void write_afterNewerHolderRead_rejectedSoThePausedReadModifyWriteCannotLand() {
        FencedStore store = FencedStore.fenced();
        assertThat(store.read("paused", 10)).hasValue(0);
        assertThat(store.read("next", 20)).hasValue(0); // the next holder reads before writing
        assertThat(store.write("paused", 10, 1)).isFalse();
        assertThat(store.write("next", 20, 1)).isTrue();
        assertThat(store.value()).isEqualTo(1);
        assertThat(store.check().safe()).isTrue();
    }

    @Test
    void unfenced_staleTokens_acceptedAndRecorded() {
        FencedStore store = FencedStore.unfenced();
        assertThat(store.isFenced()).isFalse();
        store.read("paused", 10);
        store.read("next", 20);
        assertThat(store.write("next", 20, 1)).isTrue();
        assertThat(store.write("paused", 10, 1)).isTrue();
        assertThat(store.rejectedWrites()).isZero();
        assertThat(store.highestToken()).isEqualTo(20);
        assertThat(store.accessCount()).isEqualTo(4);
        assertThat(store.accesses(2)).extracting(FencedStore.Access::sequence).containsExactly(2L, 3L);
        assertThat(store.accesses(9)).isEmpty();
        assertThat(store.history()).hasSize(2);
        FencingChecker.Report report = store.check();
        assertThat(report.staleWritesAccepted()).isEqualTo(1);
        assertThat(report.lostUpdates()).isEqualTo(1);
        assertThat(report.shortfall()).isEqualTo(1);
    }

    @Test
    void badInput_rejected() {
        FencedStore store = new FencedStore();
        assertThatThrownBy(() -> store.write(null, 1, 1)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> store.read(null, 1)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> store.accesses(-1)).isInstanceOf(IllegalArgumentException.class);
        assertThat(store.accessCount()).isZero();
    }
}
