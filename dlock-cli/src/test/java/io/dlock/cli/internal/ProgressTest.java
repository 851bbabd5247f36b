package io.dlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class ProgressTest {

    private static final String WIPE = "\r\033[K";

    @Test
    void plain_periodicStatusLines_neverSplitTheCommandsLines() {
        StringWriter text = new StringWriter();
        AtomicInteger n = new AtomicInteger();
        try (Progress progress = new Progress(
                new PrintWriter(text),
                Progress.Mode.PLAIN,
                () -> "phase x, " + n.incrementAndGet(),
                Duration.ofMillis(5))) {
            for (int i = 0; i < 200; i++) {
                progress.writer().print("line ");
                progress.writer().println(i);
            }
            await().atMost(Duration.ofSeconds(10)).until(() -> n.get() >= 3);
        }
        String out = text.toString();
        assertThat(out).doesNotContain(WIPE);
        for (String line : out.split("\n")) {
            assertThat(line).matches("line \\d+|progress: phase x, \\d+");
        }
        assertThat(out.lines().filter(l -> l.startsWith("line "))).hasSize(200);
    }

    @Test
    void line_statusRedrawnInPlace_andWipedBeforeTheCommandsLinesAndAtClose() {
        StringWriter text = new StringWriter();
        AtomicInteger n = new AtomicInteger();
        Progress progress = new Progress(
                new PrintWriter(text), Progress.Mode.LINE, () -> "s" + n.incrementAndGet(), Duration.ofMillis(5));
        await().atMost(Duration.ofSeconds(10)).until(() -> n.get() >= 2);
        progress.writer().println("a fault");
        await().atMost(Duration.ofSeconds(10)).until(() -> n.get() >= 4);
        progress.close();

        String out = text.toString();
        assertThat(out).startsWith(WIPE + "s1").contains(WIPE + "a fault\n").endsWith(WIPE);
        assertThat(out).doesNotContain("\n" + "s"); // status text never sits on its own line
    }

    @Test
    void off_printsNothingButTheCommandsLines() {
        StringWriter text = new StringWriter();
        try (Progress progress =
                new Progress(new PrintWriter(text), Progress.Mode.OFF, () -> "status", Duration.ofMillis(1))) {
            progress.writer().println("only this");
        }
        assertThat(text.toString()).isEqualTo("only this\n");
    }
}
