package io.dlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

/**
 * Runs {@code dlock torture} in this JVM for the CI-sized torture classes ({@code Torture*IT}), and
 * reads its verdict. The torture runs are split over several classes so that the build's parallel
 * test JVMs run them side by side; each run starts its own servers and workers.
 */
final class TortureRuns {

    private TortureRuns() {}

    /** What one {@code dlock torture} printed, and its exit status. */
    record Run(int status, String out, String err) {
        String output() {
            return out + "\n--- stderr ---\n" + err;
        }

        /** The summary's JSON line. */
        String json() {
            return out.lines()
                    .filter(l -> l.startsWith("{\"backend\":"))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("no JSON line in\n" + output()));
        }
    }

    static Run torture(String... args) {
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

    static long number(String json, String field) {
        Matcher m = Pattern.compile("\"" + Pattern.quote(field) + "\":(-?\\d+)").matcher(json);
        assertThat(m.find()).as("field %s in %s", field, json).isTrue();
        return Long.parseLong(m.group(1));
    }

    /**
     * Checks what every fenced run must show, the command's own verdict included: exit status 0, no
     * stale write accepted, no update lost, nothing left on the server, {@code "passed":true}.
     *
     * @return the run's JSON line, for the checks of its own
     */
    static String assertPassedFenced(Run run) {
        String output = run.output();
        assertThat(run.status()).as(output).isZero();
        String json = run.json();
        assertThat(number(json, "staleWritesAccepted")).as(output).isZero();
        assertThat(number(json, "lostUpdates")).as(output).isZero();
        assertThat(number(json, "leftovers")).as(output).isZero();
        assertThat(json).as(output).contains("\"passed\":true");
        return json;
    }

    /**
     * Every fault kind on {@code uri} for 45 s in fenced mode (enough for every kind to come round
     * once), checked field by field as well as by the command's own verdict.
     */
    static void allFaultsFenced(String uri) {
        // Memcached: after a restart lost every key, nothing is granted until the lease time plus one
        // clock second after the server's start (the boot marker's quarantine). That meets the
        // restart bound (lease + 1 s of serving) only by the few ms between memcached's clock start
        // and the torture's readiness probe (docs/safety.md), so CI keeps a margin for a loaded machine.
        String margin = uri.endsWith(":memcached") ? "4s" : "2s";
        Run run = torture(
                "--uri",
                uri,
                "--workers",
                "3",
                "--duration",
                "45s",
                "--faults",
                "pause,kill,server-restart,partition",
                "--network",
                "proxy", // the proxy's partitions here; iptables ones in TorturePartitionIT
                "--fenced",
                "--session-timeout",
                "2s",
                "--recovery-margin",
                margin,
                "--restart-margin",
                margin.equals("2s") ? "1s" : margin,
                "--seed",
                "5");

        // Every holder that was killed or paused past its session had its stale write refused or
        // never wrote; the paused ones came back to a lost lease.
        String json = assertPassedFenced(run);
        String output = run.output();
        assertThat(number(json, "shortfall")).as(output).isZero();
        assertThat(number(json, "acceptedOverlaps")).as(output).isZero();
        assertThat(number(json, "stuckWorkers")).as(output).isZero();
        assertThat(number(json, "refusedWhileValid")).as(output).isZero();
        assertThat(number(json, "operations")).as(output).isPositive();
        for (String kind : new String[] {"pause", "kill", "server-restart", "partition"}) {
            assertThat(number(json, kind)).as("%s injected\n%s", kind, output).isPositive();
        }
    }
}
