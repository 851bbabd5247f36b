package io.dlock.cli.internal.torture;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/**
 * The bound of a holder's kill when a ZooKeeper leader took over after it (and so gave the dead
 * holder's session a full timeout again): counted from the takeover, only for a takeover that
 * could have delayed the recovery.
 */
class KillBoundTest {

    private static final long MS = 1_000_000L;
    private static final long KILLED = 5_000_000_000L; // any nanoTime value
    private static final long BOUND = 4_000; // session timeout 2 s + margin 2 s

    private static long bound(OptionalLong rearmedAt, long recoveredAfterMs) {
        return TortureRun.killBoundMillis(BOUND, KILLED, rearmedAt, KILLED + recoveredAfterMs * MS);
    }

    @Test
    void noTakeoverKnown_theBoundFromTheKill() {
        assertThat(bound(OptionalLong.empty(), 4_434)).isEqualTo(BOUND);
    }

    @Test
    void takeoverBeforeTheKill_theBoundFromTheKill() {
        // The leader changed 3.5 s before the kill: the session's timeout had restarted long before.
        assertThat(bound(OptionalLong.of(KILLED - 3_500 * MS), 4_434)).isEqualTo(BOUND);
        assertThat(bound(OptionalLong.of(KILLED), 4_434)).isEqualTo(BOUND);
    }

    @Test
    void takeoverAfterTheKill_theBoundFromTheTakeover() {
        // A new leader 1.9 s after the kill: the session expires 2 s after that at the earliest.
        assertThat(bound(OptionalLong.of(KILLED + 1_900 * MS), 4_434)).isEqualTo(BOUND + 1_900);
        // Part of a millisecond counts as a whole one (the bound never shrinks by rounding).
        assertThat(bound(OptionalLong.of(KILLED + 1_900 * MS + 1), 4_434)).isEqualTo(BOUND + 1_901);
        assertThat(bound(OptionalLong.of(KILLED + 1), 4_434)).isEqualTo(BOUND + 1);
    }

    @Test
    void takeoverAtTheLastMomentOfTheBound_stillCounts() {
        assertThat(bound(OptionalLong.of(KILLED + BOUND * MS), 9_000)).isEqualTo(2 * BOUND);
    }

    @Test
    void takeoverAfterTheBoundRanOut_doesNotCount() {
        // By then a session that was to expire on time had expired: a takeover cannot excuse it.
        assertThat(bound(OptionalLong.of(KILLED + BOUND * MS + 1), 9_000)).isEqualTo(BOUND);
    }

    @Test
    void takeoverAfterTheRecovery_doesNotCount() {
        // The lock was granted again before the takeover: the takeover did not delay it.
        assertThat(bound(OptionalLong.of(KILLED + 3_000 * MS), 2_999)).isEqualTo(BOUND);
        assertThat(bound(OptionalLong.of(KILLED + 3_000 * MS), 3_000)).isEqualTo(BOUND + 3_000);
    }
}
