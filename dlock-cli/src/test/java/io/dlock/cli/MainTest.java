package io.dlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** The top-level command: its help lists every subcommand, and every usage names {@code dlock}. */
class MainTest {

    private static final List<String> COMMANDS =
            List.of("demo", "torture", "inspect", "release", "watch", "init", "bench", "help");

    @Test
    void help_listsEveryCommand_includingBench() {
        StringWriter out = new StringWriter();
        int status = Main.commandLine().setOut(new PrintWriter(out)).execute("--help");
        assertThat(status).isZero();
        String help = out.toString();
        assertThat(help).startsWith("Usage: dlock ");
        for (String command : COMMANDS) {
            assertThat(help).as("dlock --help").containsPattern("(?m)^  " + command + "\\s");
        }
        assertThat(Main.commandLine().getSubcommands().keySet()).containsExactlyElementsOf(COMMANDS);
    }

    @Test
    void everyUsageLine_startsWithDlock() {
        CommandLine main = Main.commandLine();
        main.getSubcommands().forEach((name, sub) -> {
            String usage = sub.getUsageMessage(CommandLine.Help.Ansi.OFF);
            assertThat(usage).as("usage of %s", name).containsPattern("(?m)^Usage: dlock " + name + "\\b");
            assertThat(usage).as("usage of %s", name).doesNotContainPattern("(?m)^Usage: (?!dlock )");
        });
    }

    @Test
    void bench_withoutTheBenchmarksJar_saysWhereItRuns_andExitsTwo() {
        StringWriter err = new StringWriter();
        int status = Main.commandLine().setErr(new PrintWriter(err)).execute("bench", "--quick");
        assertThat(status).isEqualTo(2);
        assertThat(err.toString()).contains("./dlock bench").contains("benchmarks.jar");
    }
}
