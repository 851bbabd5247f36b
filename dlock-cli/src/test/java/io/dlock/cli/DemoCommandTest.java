package io.dlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

class DemoCommandTest {

    private final StringWriter out = new StringWriter();
    private final StringWriter err = new StringWriter();

    private int execute(String... args) {
        CommandLine commandLine = Main.commandLine();
        commandLine.setOut(new PrintWriter(out, true));
        commandLine.setErr(new PrintWriter(err, true));
        return commandLine.execute(args);
    }

    @ParameterizedTest
    @CsvSource(
            delimiter = '|',
            value = {
                "--stock|0|Invalid value for option '--stock': must be between 1 and 1000, was 0",
                "--stock|-5|Invalid value for option '--stock': must be between 1 and 1000, was -5",
                "--stock|1001|Invalid value for option '--stock': must be between 1 and 1000, was 1001",
                "--stock|many|Invalid value for option '--stock': 'many' is not an int",
                "--workers|0|Invalid value for option '--workers': must be between 2 and 16, was 0",
                "--workers|1|rounds 3 and 4 need a second worker",
                "--workers|17|must be between 2 and 16, was 17",
                "--session-timeout|0s|Invalid value for option '--session-timeout': must be between 1s and 60s, was 0s",
                "--session-timeout|500ms|must be between 1s and 60s, was 500ms",
                "--session-timeout|2m|must be between 1s and 60s, was 120s",
                "--session-timeout|soon|'soon' is not a duration; write it like 3s, 1500ms or 2m",
            })
    void demo_invalidOption_usageErrorNamingIt(String option, String value, String message) {
        int status = execute("demo", option, value);

        assertThat(status).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(err.toString()).contains(message).contains("Usage: dlock demo");
        assertThat(out.toString()).isEmpty();
    }

    @Test
    void demo_help_listsOptionsWithDefaults() {
        int status = execute("demo", "--help");

        assertThat(status).isZero();
        assertThat(out.toString())
                .contains(
                        "--stock=N",
                        "(default: 20)",
                        "--workers=W",
                        "(default: 3)",
                        "--session-timeout=DURATION",
                        "(default: 3s)",
                        "Exit codes:");
    }

    @Test
    void dlock_noSubcommand_usageError() {
        int status = execute();

        assertThat(status).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(err.toString()).contains("Missing subcommand").contains("demo");
    }

    @Test
    void dlock_unknownSubcommand_usageError() {
        int status = execute("oversell");

        assertThat(status).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(err.toString()).contains("oversell");
    }
}
