package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.testkit.FencedStore.Access;
import io.dlock.testkit.FencedStore.Kind;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class FencingCheckerTest {

    @Test
    void check_serialSections_noProblems() {
        FencedStore store = FencedStore.fenced();
        for (int i = 1; i <= 5; i++) {
            long v = store.read("c" + i % 2, i).orElseThrow();
            store.write("c" + i % 2, i, v + 1);
        }
        FencingChecker.Report r = store.check();
        assertThat(r.sections()).isEqualTo(5);
        assertThat(r.accesses()).isEqualTo(10);
        assertThat(r.acceptedWrites()).isEqualTo(5);
        assertThat(r.overlaps()).isZero();
        assertThat(r.acceptedOverlaps()).isZero();
        assertThat(r.lostUpdates()).isZero();
        assertThat(r.shortfall()).isZero();
        assertThat(r.finalValue()).isEqualTo(5);
        assertThat(r.safe()).isTrue();
        assertThat(r.firstProblem()).isEmpty();
    }

    @Test
    void check_pausedHolderFenced_overlapSeenButNothingAccepted() {
        FencedStore store = FencedStore.fenced();
        long v = store.read("paused", 10).orElseThrow();
        long w = store.read("next", 20).orElseThrow();
        store.write("next", 20, w + 1);
        store.write("paused", 10, v + 1); // wakes up late: refused
        FencingChecker.Report r = store.check();
        assertThat(r.overlaps()).isEqualTo(1);
        assertThat(r.acceptedOverlaps()).isZero(); // its read came before next's section; its write was refused
        assertThat(r.staleWritesRejected()).isEqualTo(1);
        assertThat(r.staleWritesAccepted()).isZero();
        assertThat(r.lostUpdates()).isZero();
        assertThat(r.shortfall()).isZero();
        assertThat(r.safe()).isTrue();
    }

    @Test
    void check_pausedHolderWakesBeforeNextWrites_refusedWithoutAnyAcceptedOverlap() {
        FencedStore store = FencedStore.fenced();
        store.read("next", 20);
        store.read("paused", 10); // woke up after the next holder's read: refused
        store.write("paused", 10, 1);
        store.write("next", 20, 1);
        FencingChecker.Report r = store.check();
        assertThat(r.overlaps()).isEqualTo(1);
        assertThat(r.acceptedOverlaps()).isZero();
        assertThat(r.staleReadsRejected()).isEqualTo(1);
        assertThat(r.staleWritesRejected()).isEqualTo(1);
        assertThat(r.safe()).isTrue();
    }

    @Test
    void check_unfencedPausedHolder_staleWriteAcceptedAndUpdateLost() {
        FencedStore store = FencedStore.unfenced();
        long v = store.read("paused", 10).orElseThrow();
        long w = store.read("next", 20).orElseThrow();
        store.write("next", 20, w + 1);
        store.write("paused", 10, v + 1);
        FencingChecker.Report r = store.check();
        assertThat(r.staleWritesAccepted()).isEqualTo(1);
        assertThat(r.lostUpdates()).isEqualTo(1);
        assertThat(r.acceptedOverlaps()).isEqualTo(1);
        assertThat(r.shortfall()).isEqualTo(1);
        assertThat(r.safe()).isFalse();
        assertThat(r.firstProblem()).contains("paused").contains("token 10");
    }

    @Test
    void check_threeNestedSections_countsEveryInterruptedSection() {
        List<Access> h = new ArrayList<>();
        h.add(access(0, Kind.READ, "a", 1, 0));
        h.add(access(1, Kind.READ, "b", 2, 0));
        h.add(access(2, Kind.READ, "c", 3, 0));
        h.add(access(3, Kind.WRITE, "c", 3, 1));
        h.add(access(4, Kind.WRITE, "b", 2, 1));
        h.add(access(5, Kind.WRITE, "a", 1, 1));
        h.add(access(6, Kind.READ, "d", 4, 1)); // after everyone: no overlap
        FencingChecker.Report r = FencingChecker.check(h, 0, 1);
        assertThat(r.overlaps()).isEqualTo(2); // a and b were interrupted; c ran undisturbed
        assertThat(r.lostUpdates()).isEqualTo(2); // b and a wrote over c's update
        assertThat(r.staleWritesAccepted()).isEqualTo(2);
        assertThat(r.shortfall()).isEqualTo(2);
    }

    @Test
    void check_pausedHolderAcrossManySections_oneInterruptedSection() {
        FencedStore store = FencedStore.fenced();
        long v = store.read("paused", 1).orElseThrow();
        for (long t = 2; t < 50; t++) {
            long x = store.read("w", t).orElseThrow();
            store.write("w", t, x + 1);
        }
        store.write("paused", 1, v + 1);
        FencingChecker.Report r = store.check();
        assertThat(r.overlaps()).isEqualTo(1);
        assertThat(r.acceptedOverlaps()).isZero();
        assertThat(r.sections()).isEqualTo(49);
    }

    @Test
    void check_outOfOrder_rejected() {
        List<Access> h = List.of(access(1, Kind.READ, "a", 1, 0), access(0, Kind.READ, "b", 1, 0));
        assertThatThrownBy(() -> FencingChecker.check(h, 0, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("out of order");
    }

    private static Access access(long seq, Kind kind, String client, long token, long value) {
        return new Access(seq, kind, client, token, value, seq, true);
    }
}
