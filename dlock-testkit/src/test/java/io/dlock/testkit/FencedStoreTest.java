package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;

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
}
