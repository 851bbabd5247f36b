package io.dlock.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class DataLossFencesTest {

    /*
     * The log lines are read where the tests' SLF4J backend (slf4j-simple) writes them: System.err,
     * which it looks up at every line. The backend name is unique to this class, so that a line
     * another thread logs meanwhile is not counted.
     */
    private static final String BACKEND = "fence-log-test";

    private final ByteArrayOutputStream captured = new ByteArrayOutputStream();
    private PrintStream originalErr;

    @BeforeEach
    void captureStderr() {
        originalErr = System.err;
        System.setErr(new PrintStream(new TeeStream(originalErr, captured), true, StandardCharsets.UTF_8));
    }

    @AfterEach
    void restoreStderr() {
        System.setErr(originalErr);
    }

    /** The WARN lines {@link DataLossFences} logged for {@link #BACKEND} so far. */
    private List<String> warnings() {
        String text;
        synchronized (captured) {
            text = captured.toString(StandardCharsets.UTF_8);
        }
        return text.lines()
                .filter(l -> l.contains("WARN") && l.contains("[backend=" + BACKEND + "]"))
                .toList();
    }

    /** Writes to the original stream and to the capture. */
    private static final class TeeStream extends java.io.OutputStream {
        private final PrintStream original;
        private final ByteArrayOutputStream copy;

        TeeStream(PrintStream original, ByteArrayOutputStream copy) {
            this.original = original;
            this.copy = copy;
        }

        @Override
        public void write(int b) {
            original.write(b);
            synchronized (copy) {
                copy.write(b);
            }
        }

        @Override
        public void write(byte[] b, int off, int len) {
            original.write(b, off, len);
            synchronized (copy) {
                copy.write(b, off, len);
            }
        }
    }

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

    @Test
    void noticed_oneFenceReportedByManyReplies_logsOneWarnNamingScopeAndEnd() throws Exception {
        DataLossFences logged = new DataLossFences(BACKEND, "slots", clock);
        for (int i = 0; i < 50; i++) {
            logged.noticed("key prefix 'shop'", 30_000 - i, "the epoch marker is missing");
        }
        Thread.sleep(1_200); // a deferred summary, if one were due, has been written by now

        assertThat(warnings())
                .singleElement(org.assertj.core.api.InstanceOfAssertFactories.STRING)
                .contains("data-loss fence on key prefix 'shop' until " + clock.now.plusSeconds(30))
                .contains("the epoch marker is missing")
                .contains("nothing is granted there until then");
    }

    @Test
    void noticed_manySlotsAlternatingWithinASecond_oneWarnThenOneSummaryCountingEachSlotOnce() {
        DataLossFences logged = new DataLossFences(BACKEND, "slots", clock);
        logged.noticed("slot 0", 30_000, "lost");
        // Replies for 99 more slots, each reported twice and interleaved (0,1,0,2,1,3,...): the
        // summary counts 99, not every change of scope; it comes a second later although no further
        // notice arrives (the last of a run used to stay unlogged).
        for (int i = 1; i < 100; i++) {
            logged.noticed("slot " + i, 30_000, "lost");
            logged.noticed("slot " + (i - 1), 30_000, "lost");
        }
        assertThat(warnings()).hasSize(1);

        await().atMost(Duration.ofSeconds(5)).until(() -> warnings().size() == 2);
        List<String> lines = warnings();
        assertThat(lines.get(0)).contains("data-loss fence on slot 0 until");
        assertThat(lines.get(1))
                .contains("data-loss fences on 99 more slots")
                .contains("the last slot 99 until " + clock.now.plusSeconds(30));
        await().during(Duration.ofMillis(1_500))
                .atMost(Duration.ofSeconds(3))
                .until(() -> warnings().size() == 2);
    }

    @Test
    void noticed_newFenceAfterTheLastEnded_logsANewWarnAndCountsAfresh() {
        DataLossFences logged = new DataLossFences(BACKEND, "slots", clock);
        logged.noticed("slot 1", 1_000, "lost");
        clock.now = clock.now.plusSeconds(2); // that fence ended
        logged.noticed("slot 1", 1_000, "lost again");
        assertThat(warnings()).hasSize(2);
        assertThat(warnings().get(1)).contains("lost again");
    }
}
