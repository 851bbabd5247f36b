package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class ChildJvmIT {

    private static final Duration START = Timing.scale(Duration.ofSeconds(20));
    private static final Duration WAIT = Timing.scale(Duration.ofSeconds(5));

    @Test
    void awaitLine_readyAndEcho_returnsLinesInOrderAfterCursor() {
        try (ChildJvm child = ChildJvm.start(EchoMain.class, List.of())) {
            String ready = child.awaitLine("READY ", START);
            assertThat(ready).isEqualTo("READY " + child.pid());

            child.send("one");
            child.send("ERR two");
            child.send("three");
            assertThat(child.awaitLine("ECHO ", WAIT)).isEqualTo("ECHO one");
            assertThat(child.awaitLine("two", WAIT)).isEqualTo("two"); // stderr is merged
            assertThat(child.awaitLine("ECHO ", WAIT)).isEqualTo("ECHO three");
            assertThat(child.lines()).contains("READY " + child.pid(), "ECHO one", "two", "ECHO three");

            List<String> ticks = child.awaitLines("TICK ", 3, WAIT);
            assertThat(ticks).hasSize(3).allSatisfy(line -> assertThat(line).startsWith("TICK "));
            assertThat(child.lines().indexOf(ticks.get(0)))
                    .isGreaterThan(child.lines().indexOf("ECHO three"));
        }
    }

    @Test
    void awaitLine_timeout_throwsWithTailAndState() {
        try (ChildJvm child = ChildJvm.start(EchoMain.class, List.of())) {
            child.awaitLine("READY ", START);
            assertThatThrownBy(() -> child.awaitLine("NEVER", Duration.ofMillis(300)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("timed out")
                    .hasMessageContaining("[alive]")
                    .hasMessageContaining("TICK ");
        }
    }

    @Test
    void waitFor_childExits_returnsExitCodeAndAwaitFailsFast() {
        try (ChildJvm child = ChildJvm.start(EchoMain.class, List.of())) {
            child.awaitLine("READY ", START);
            child.send("EXIT 3");
            assertThat(child.waitFor(WAIT)).isEqualTo(3);
            assertThat(child.isAlive()).isFalse();

            long startNanos = System.nanoTime();
            assertThatThrownBy(() -> child.awaitLine("NEVER", Duration.ofSeconds(30)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("output ended")
                    .hasMessageContaining("exited(3)");
            assertThat(Duration.ofNanos(System.nanoTime() - startNanos)).isLessThan(Duration.ofSeconds(10));
        }
    }

    @Test
    void pause_stopsTicks_resumeRestartsThem() throws Exception {
        try (ChildJvm child = ChildJvm.start(EchoMain.class, List.of())) {
            child.awaitLine("READY ", START);
            child.awaitLines("TICK ", 2, WAIT);

            child.pause();
            await().atMost(WAIT).until(() -> processState(child.pid()) == 'T');
            long frozen = ticks(child);
            await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2)).until(() -> ticks(child) == frozen);
            assertThat(child.isAlive()).isTrue();

            child.resume();
            await().atMost(WAIT).until(() -> ticks(child) > frozen + 2);
        }
    }

    @Test
    void kill_liveChild_deadWithSigkillExitCode() {
        ChildJvm child = ChildJvm.start(EchoMain.class, List.of());
        try {
            child.awaitLine("READY ", START);
            child.kill();
            assertThat(child.isAlive()).isFalse();
            assertThat(child.waitFor(Duration.ZERO)).isEqualTo(137);
            assertThat(ProcessHandle.of(child.pid()).filter(ProcessHandle::isAlive))
                    .isEmpty();
        } finally {
            child.close();
        }
    }

    @Test
    void close_liveAndPausedChild_killsItIdempotently() {
        ChildJvm child = ChildJvm.start(EchoMain.class, List.of());
        child.awaitLine("READY ", START);
        child.pause(); // SIGKILL must still end a stopped process
        child.close();
        assertThat(child.isAlive()).isFalse();
        assertThat(child.waitFor(Duration.ZERO)).isNotZero();
        child.close();
        assertThatThrownBy(child::pause)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("exited");
    }

    private static long ticks(ChildJvm child) {
        return child.lines().stream().filter(line -> line.startsWith("TICK ")).count();
    }

    /** The state letter from /proc/PID/stat: 'T' when stopped by a signal. */
    private static char processState(long pid) throws Exception {
        String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        return stat.charAt(stat.lastIndexOf(')') + 2);
    }
}
