package io.dlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

class TortureCommandTest {

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
                "--workers|1|Invalid value for option '--workers': must be between 2 and 16, was 1",
                "--workers|17|must be between 2 and 16, was 17",
                "--duration|0s|Invalid value for option '--duration': must be between 1s and 2h, was 0s",
                "--duration|3h|must be between 1s and 2h",
                "--duration|forever|'forever' is not a duration",
                "--session-timeout|500ms|Invalid value for option '--session-timeout': must be between 1s and 60s",
                "--lease-time|61s|Invalid value for option '--lease-time': must be between 1s and 60s, was 61s",
                "--recovery-margin|2m|Invalid value for option '--recovery-margin': must be between 0s and 60s",
                "--work-ms|-1|Invalid value for option '--work-ms': must be between 0 and 1000, was -1",
                "--max-faults|-1|Invalid value for option '--max-faults': must be >= 0, was -1",
                "--faults|pause,gc|Invalid value for option '--faults': unknown fault 'gc'; known: pause,kill,server-restart,partition",
                "--uri|redis://127.0.0.1:6379|Invalid value for option '--uri': unsupported --uri 'redis://127.0.0.1:6379'",
                "--uri|zookeeper://a:1,b:2/x|several (a:1,b:2)",
                "--restart-margin|61s|Invalid value for option '--restart-margin': must be between 0s and 60s",
                "--server-downtime|5s..1s|Invalid value for option '--server-downtime': must be a range within 0s..60s with MIN <= MAX, was '5s..1s'",
                "--server-downtime|1s..2m|must be a range within 0s..60s",
                "--server-downtime|soon|Invalid value for option '--server-downtime': 'soon' is not a duration or MIN..MAX",
                "--server-downtime|1s..2s..3s|'1s..2s..3s' is not a duration or MIN..MAX",
                "--network|wifi|Invalid value for option '--network': must be auto, iptables or proxy, was 'wifi'",
                "--primitive|mutex|Invalid value for option '--primitive': must be exclusive, read-write, semaphore, multi or election, was 'mutex'",
                "--read-percent|101|Invalid value for option '--read-percent': must be between 0 and 100, was 101",
                "--permits|0|Invalid value for option '--permits': must be between 1 and 16, was 0",
                "--parts|9|Invalid value for option '--parts': must be between 1 and 8, was 9",
                "--library|hazelcast|Invalid value for option '--library': must be dlock, curator, redisson or spring, was 'hazelcast'",
            })
    void torture_invalidOption_usageErrorNamingIt(String option, String value, String message) {
        String[] args = option.equals("--uri") && value.startsWith("zookeeper://")
                ? new String[] {"torture", option, value, "--faults", "pause"}
                : new String[] {"torture", option, value};
        int status = execute(args);

        assertThat(status).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(err.toString()).contains(message).contains("Usage: dlock torture");
        assertThat(out.toString()).isEmpty();
    }

    @Test
    void torture_anchorLibraryWithSharedPrimitive_usageError() {
        int status = execute("torture", "--library", "curator", "--primitive", "read-write");

        assertThat(status).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(err.toString())
                .contains("Invalid value for option '--library': curator workers take --primitive exclusive or"
                        + " election, not --primitive read-write");
    }

    @Test
    void torture_springWithExclusivePrimitive_usageError() {
        int status = execute("torture", "--library", "spring", "--uri", "embedded:postgres");

        assertThat(status).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(err.toString())
                .contains("Invalid value for option '--library': spring workers take --primitive election, not"
                        + " --primitive exclusive");
    }

    @Test
    void torture_anchorLibraryWithoutItsJar_usageErrorSayingWhereItIs() {
        // dlock-cli's own classpath has no anchor workers: they are in dlock-benchmarks.
        int status = execute("torture", "--library", "redisson", "--uri", "embedded:redis", "--duration", "5s");

        assertThat(status).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(err.toString())
                .contains("--library redisson needs its workers (io.dlock.benchmarks.torture.RedissonTortureWorker)")
                .contains("./dlock torture --library redisson");
    }

    @Test
    void torture_serverRestartWithExternalServer_usageError() {
        int status = execute("torture", "--uri", "zookeeper://127.0.0.1:2181/x", "--faults", "server-restart");

        assertThat(status).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(err.toString()).contains("server-restart needs a server the torture starts");
    }

    @Test
    void torture_unreachableExternalServer_failsWithClearMessageAndStatus1() {
        int status = execute(
                "torture", "--uri", "zookeeper://no-such-host.invalid:2181/x", "--faults", "none", "--duration", "1s");

        assertThat(status).isEqualTo(1);
        assertThat(err.toString()).contains("dlock torture: could not run").contains("no-such-host.invalid");
    }

    @Test
    void torture_help_listsOptionsWithDefaults() {
        int status = execute("torture", "--help");

        assertThat(status).isZero();
        assertThat(out.toString())
                .contains(
                        "--uri=URI",
                        "--workers=N",
                        "(default: 3)",
                        "--duration=DURATION",
                        "--faults=LIST",
                        "--[no-]fenced",
                        "--session-timeout=DURATION",
                        "(default: 2s)",
                        "--restart-margin=DURATION",
                        "--server-downtime=MIN..MAX",
                        "--[no-]back-to-back",
                        "embedded:zookeeper-ensemble",
                        "Exit codes:");
    }
}
