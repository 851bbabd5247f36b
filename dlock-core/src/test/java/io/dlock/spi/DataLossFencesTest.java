package io.dlock.spi;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import org.junit.jupiter.api.Test;

class DataLossFencesTest {

    /** A clock the test moves by hand. */
    private static final class ManualClock extends Clock {
        Instant now = Instant.parse("2026-01-01T00:00:00Z");

        @Override
        public ZoneId getZone() {
            return ZoneId.of("UTC");
        }

        @Override
        public Clock withZone(ZoneId zone) {
            return this;
        }

        @Override
        public Instant instant() {
            return now;
        }
    }

    private final ManualClock clock = new ManualClock();
    private final DataLossFences fences = new DataLossFences("redis", "slots", clock);

    @Test
    void noticedFence_isCurrentUntilItsEnd_thenGone() {
        assertThat(fences.current()).isEmpty();
        fences.noticed("slot 1", 3_000, "lost");
        assertThat(fences.current()).hasValueSatisfying(f -> {
            assertThat(f.scope()).isEqualTo("slot 1");
            assertThat(f.until()).isEqualTo(clock.now.plusSeconds(3));
            assertThat(f.describe())
                    .contains("slot 1")
                    .contains("lost")
                    .contains(f.until().toString());
        });
        clock.now = clock.now.plus(Duration.ofMillis(2_999));
        assertThat(fences.current()).isPresent();
        clock.now = clock.now.plus(Duration.ofMillis(1));
        assertThat(fences.current()).isEmpty();
    }

    @Test
    void laterEndWins_anEarlierOneDoesNotShortenIt_andNonPositiveRemaindersAreIgnored() {
        fences.noticed("slot 1", 5_000, "lost");
        fences.noticed("slot 2", 2_000, "lost");
        assertThat(fences.current().orElseThrow().scope()).isEqualTo("slot 1");
        fences.noticed("slot 3", 9_000, "lost");
        assertThat(fences.current().orElseThrow().until()).isEqualTo(clock.now.plusSeconds(9));
        fences.noticed("slot 4", 0, "over");
        fences.noticed("slot 5", -5, "over");
        assertThat(fences.current().orElseThrow().scope()).isEqualTo("slot 3");
    }

    @Test
    void aNewFenceAfterTheLastEnded_replacesIt_evenIfShorter() {
        fences.noticed("prefix a", 10_000, "lost");
        clock.now = clock.now.plusSeconds(11);
        fences.noticed("prefix a", 1_000, "lost again");
        assertThat(fences.current().orElseThrow().reason()).isEqualTo("lost again");
    }
}
