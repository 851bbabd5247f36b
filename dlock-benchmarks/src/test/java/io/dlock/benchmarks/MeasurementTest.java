package io.dlock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The overlap check and the figures every result is built from. */
class MeasurementTest {

    private static Measurement sections(long[] enters, long[] exits) {
        return new Measurement(enters.length, 1_000_000_000L, new long[0], enters, exits, 0);
    }

    @Test
    void overlaps_disjointSectionsInAnyOrder_zero() {
        Measurement m = sections(new long[] {30, 10, 50}, new long[] {40, 20, 60});
        assertThat(m.overlaps()).isZero();
    }

    @Test
    void overlaps_sectionStartingInsideAnother_counted() {
        Measurement m = sections(new long[] {10, 15, 50}, new long[] {20, 25, 60});
        assertThat(m.overlaps()).isEqualTo(1);
    }

    @Test
    void overlaps_sectionInsideALongEarlierOne_counted() {
        // The third starts after the second ended, but the first is still inside.
        Measurement m = sections(new long[] {10, 20, 40}, new long[] {100, 30, 50});
        assertThat(m.overlaps()).isEqualTo(2);
    }

    @Test
    void overlaps_directOverlapsAdded() {
        Measurement m = new Measurement(1, 1, new long[0], new long[] {1}, new long[] {2}, 3);
        assertThat(m.overlaps()).isEqualTo(3);
    }

    @Test
    void concurrent_sameWindow_sumsOpsKeepsWindow() {
        Measurement a = new Measurement(10, 2_000_000_000L, new long[] {1, 2}, new long[0], new long[0], 0);
        Measurement b = new Measurement(30, 2_000_000_000L, new long[] {3}, new long[0], new long[0], 0);
        Measurement both = Measurement.concurrent(List.of(a, b));
        assertThat(both.ops).isEqualTo(40);
        assertThat(both.opsPerSecond()).isEqualTo(20.0);
        assertThat(both.latencies).containsExactly(1, 2, 3);
    }

    @Test
    void merge_rounds_sumsWindows() {
        Measurement a = new Measurement(10, 1_000_000_000L, new long[0], new long[0], new long[0], 0);
        Measurement b = new Measurement(30, 1_000_000_000L, new long[0], new long[0], new long[0], 0);
        assertThat(Measurement.merge(List.of(a, b)).opsPerSecond()).isEqualTo(20.0);
    }

    @Test
    void percentileMicros_nearestRank() {
        long[] lat = new long[100];
        for (int i = 0; i < 100; i++) {
            lat[i] = (100 - i) * 1_000L; // 1..100 us, unsorted
        }
        Measurement m = new Measurement(100, 1, lat, new long[0], new long[0], 0);
        assertThat(m.percentileMicros(0.50)).isEqualTo(50.0);
        assertThat(m.percentileMicros(0.99)).isEqualTo(99.0);
    }

    @Test
    void toJson_escapesAndNestsMaps() {
        String json = Report.toJson(Map.of("a\"b", List.of(1, 2.5, "x\ny")));
        assertThat(json).isEqualTo("{\"a\\\"b\":[1,2.500,\"x\\ny\"]}");
    }

    @Test
    void median_oddEvenAndUnknown() {
        assertThat(Workloads.median(List.of(145.0, 213.0, 140.0))).isEqualTo(145.0);
        assertThat(Workloads.median(List.of(4.0, 1.0, 3.0, 2.0))).isEqualTo(2.5);
        assertThat(Workloads.median(List.of(1.0, Double.NaN, 2.0))).isNaN();
        assertThat(Workloads.median(List.of())).isNaN();
    }

    @Test
    void usedHeapAfterGc_countsWhatStaysReachableAndNotGarbageMadeSince() throws Exception {
        long before = Workloads.usedHeapAfterGc();
        byte[][] kept = new byte[1024][]; // 64 KiB each: no humongous object, whatever the region size
        for (int i = 0; i < kept.length; i++) {
            kept[i] = new byte[64 << 10];
        }
        long held = Workloads.usedHeapAfterGc();
        long garbage = 0;
        for (int i = 0; i < 512; i++) {
            garbage += new byte[64 << 10].length; // made after the collection: not in its figure
        }
        long heldAgain = Workloads.heapAfterLastGc();
        assertThat(held - before).isBetween(64L << 20, 68L << 20);
        assertThat(garbage).isEqualTo(32L << 20);
        assertThat(heldAgain).isLessThan(held + (8L << 20));
        assertThat(kept[1023]).hasSize(64 << 10);
    }
}
