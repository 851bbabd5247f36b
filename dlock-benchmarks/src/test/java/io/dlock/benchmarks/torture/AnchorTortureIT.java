package io.dlock.benchmarks.torture;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.cli.Main;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/**
 * Issue 17 item 6: {@code dlock torture --library redisson} runs Redisson's {@code RLock} in the
 * torture's workers (the anchor workers of this module), and observe mode counts the stale writes
 * they get accepted. Holders are paused longer than the lease while inside, and nothing checks
 * before writing: the run must count accepted stale writes and attribute them to the pauses, so
 * the figure published for the anchors is a count that can be non-zero, not a constant.
 */
@Tag("torture")
class AnchorTortureIT {

    @Test
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void torture_redissonUncheckedUnderLongPauses_countsStaleWritesAccepted() {
        Run run = torture(
                "--library",
                "redisson",
                "--uri",
                "embedded:redis",
                "--workers",
                "2",
                "--duration",
                "25s",
                "--faults",
                "pause",
                "--no-fenced",
                "--lease-time",
                "1s",
                "--seed",
                "3");

        String output = run.output();
        assertThat(output).contains("redisson workers (for comparison)");
        String json = run.json();
        assertThat(json).as(output).contains("\"library\":\"redisson\"");
        assertThat(number(json, "operations")).as(output).isPositive();
        assertThat(number(json, "pause")).as(output).isPositive();
        long stale = number(json, "staleWritesAccepted");
        assertThat(stale).as(output).isPositive();
        assertThat(json).as(output).contains("\"staleAcceptedByFault\":{\"pause\":" + stale + "}");
        assertThat(number(json, "leftovers")).as(output).isZero();
        assertThat(number(json, "stuckWorkers")).as(output).isZero();
    }

    /**
     * The election anchors run the election torture: Curator's {@code LeaderLatch} fenced by its
     * node's sequence number, Spring's {@code LockRegistryLeaderInitiator} on PostgreSQL unfenced
     * (it has no term number). A leader is paused and killed; the figures are the run's to report,
     * so only that it ran and counted is asserted (and, fenced, that the fence held).
     */
    @ParameterizedTest(name = "{0}")
    @CsvSource({"curator, embedded, --fenced", "spring, embedded:postgres, --no-fenced"})
    @Timeout(value = 90, unit = TimeUnit.SECONDS)
    void torture_electionAnchorUnderPauseAndKill_countsTermsAndOverlaps(String library, String uri, String fencing) {
        Run run = torture(
                "--library",
                library,
                "--primitive",
                "election",
                "--uri",
                uri,
                "--workers",
                "3",
                "--duration",
                "20s",
                "--faults",
                "pause,kill",
                fencing,
                "--session-timeout",
                "1s",
                "--seed",
                "7",
                "--report",
                "none");

        String output = run.output();
        assertThat(output).contains(library + " workers (for comparison)");
        String json = run.json();
        assertThat(json).as(output).contains("\"library\":\"" + library + "\"", "\"primitive\":\"election\"");
        assertThat(number(json, "operations")).as(output).isPositive();
        assertThat(number(json, "terms")).as(output).isGreaterThanOrEqualTo(2);
        assertThat(number(json, "kill")).as(output).isPositive();
        assertThat(number(json, "overlappingValidTerms")).as(output).isNotNegative();
        if (fencing.equals("--fenced")) {
            assertThat(number(json, "staleWritesAccepted")).as(output).isZero();
        }
        assertThat(number(json, "stuckWorkers")).as(output).isZero();
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void torture_anchorOnTheWrongBackend_isAUsageError() {
        Run run = torture("--library", "curator", "--uri", "embedded:redis", "--duration", "5s", "--faults", "kill");

        assertThat(run.status()).as(run.output()).isEqualTo(2);
        assertThat(run.output()).contains("--library curator runs on a single zookeeper server");
    }

    private record Run(int status, String out, String err) {
        String output() {
            return out + "\n--- stderr ---\n" + err;
        }

        String json() {
            return out.lines()
                    .filter(l -> l.startsWith("{\"backend\":"))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("no JSON line in\n" + output()));
        }
    }

    private static Run torture(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine commandLine = Main.commandLine();
        commandLine.setOut(new PrintWriter(out, true));
        commandLine.setErr(new PrintWriter(err, true));
        String[] all = new String[args.length + 1];
        all[0] = "torture";
        System.arraycopy(args, 0, all, 1, args.length);
        int status = commandLine.execute(all);
        return new Run(status, out.toString(), err.toString());
    }

    private static long number(String json, String field) {
        Matcher m = Pattern.compile("\"" + Pattern.quote(field) + "\":(-?\\d+)").matcher(json);
        assertThat(m.find()).as("field %s in %s", field, json).isTrue();
        return Long.parseLong(m.group(1));
    }
}
