package io.dlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

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
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/**
 * The CI-sized torture: {@code dlock torture} on an embedded ZooKeeper (child JVM), a 3-server
 * ZooKeeper ensemble (server-restart kills the leader), an embedded redis-server, etcd, PostgreSQL
 * and memcached, for about 45 s each with every fault kind, in fenced mode. Fails on any accepted stale write, lost update, overlap
 * that got through fencing, leftover znode or key, stuck worker, or recovery beyond session timeout +
 * margin (the command's own verdict), and checks the JSON figures itself as well.
 */
@Tag("torture")
class TortureIT {

    @ParameterizedTest(name = "{0}")
    @ValueSource(
            strings = {
                "embedded",
                "embedded:zookeeper-ensemble",
                "embedded:redis",
                "embedded:etcd",
                "embedded:postgres",
                "embedded:memcached"
            })
    @Timeout(value = 110, unit = TimeUnit.SECONDS)
    void torture_allFaultsFenced_passes(String uri) {
        // Memcached: after a restart lost every key, nothing is granted until the lease time plus one
        // clock second after the server's start (the boot marker's quarantine). That meets issue 17's
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
                "proxy", // the proxy's partitions here; iptables ones in torture_partitionsByIptables_pass
                "--fenced",
                "--session-timeout",
                "2s",
                "--recovery-margin",
                margin,
                "--restart-margin",
                margin.equals("2s") ? "1s" : margin,
                "--seed",
                "5");

        String output = run.output();
        assertThat(run.status()).as(output).isZero();
        String json = run.json();
        assertThat(number(json, "staleWritesAccepted")).as(output).isZero();
        assertThat(number(json, "lostUpdates")).as(output).isZero();
        assertThat(number(json, "shortfall")).as(output).isZero();
        assertThat(number(json, "acceptedOverlaps")).as(output).isZero();
        assertThat(number(json, "leftovers")).as(output).isZero();
        assertThat(number(json, "stuckWorkers")).as(output).isZero();
        assertThat(number(json, "refusedWhileValid")).as(output).isZero();
        assertThat(number(json, "operations")).as(output).isPositive();
        for (String kind : new String[] {"pause", "kill", "server-restart", "partition"}) {
            assertThat(number(json, kind)).as("%s injected\n%s", kind, output).isPositive();
        }
        // Every holder that was killed or paused past its session had its stale write refused or
        // never wrote; the paused ones came back to a lost lease.
        assertThat(json).as(output).contains("\"passed\":true");
    }

    /**
     * Issue 17: three ZooKeeper restarts back to back, each down longer than the session timeout
     * (so every client gives its session up) and the next kill 1 to 2 s after the server serves
     * again. The lock must be granted again within the session timeout + 1 s of serving after every
     * restart: clients delete the nodes of the sessions they gave up instead of leaving them to the
     * server's expiry, which each restart would postpone. Without that, a chain of restarts kept
     * the lock from everyone for the whole chain.
     */
    @Test
    @Timeout(value = 110, unit = TimeUnit.SECONDS)
    void torture_zooKeeperRestartsBackToBack_grantedAgainWithinBoundAfterEach() {
        Run run = torture(
                "--uri",
                "embedded",
                "--workers",
                "3",
                "--duration",
                "40s",
                "--faults",
                "server-restart",
                "--back-to-back",
                "--server-downtime",
                "2500ms..3500ms",
                "--max-faults",
                "3",
                "--session-timeout",
                "2s",
                "--restart-margin",
                "1s",
                "--seed",
                "17");

        String output = run.output();
        assertThat(run.status()).as(output).isZero();
        String json = run.json();
        assertThat(number(json, "server-restart")).as(output).isEqualTo(3);
        assertThat(number(json, "inBound")).as(output).isEqualTo(3);
        assertThat(number(json, "restartBoundMs")).as(output).isEqualTo(3_000);
        assertThat(number(json, "staleWritesAccepted")).as(output).isZero();
        assertThat(number(json, "lostUpdates")).as(output).isZero();
        assertThat(number(json, "leftovers")).as(output).isZero();
        assertThat(json).as(output).contains("\"backToBack\":true", "\"passed\":true");
    }

    /**
     * Issue 17: Redis with Sentinel (a master, one replica, one Sentinel), the master killed under
     * load and restarted (a failover each time), with and without {@code waitReplicas=1}. Fenced
     * mode must accept no stale write and lose no update; the grants a failover lost (a second
     * holder stopped only by the fence) are counted as stale writes refused, and printed.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"embedded:redis-sentinel", "embedded:redis-sentinel-wait"})
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void torture_redisSentinelFailovers_noStaleWriteAccepted(String uri) {
        Run run = torture(
                "--uri",
                uri,
                "--workers",
                "3",
                "--duration",
                "60s",
                "--faults",
                "server-restart,kill,pause",
                "--fenced",
                "--session-timeout",
                "2s",
                "--recovery-margin",
                "2s",
                // A failover whose old master returns before the promotion has taken the clients 7 to
                // 12 s past the lease to recover (docs/safety.md): this run holds them to 20 s.
                "--restart-margin",
                "20s",
                "--seed",
                "23");

        String output = run.output();
        assertThat(run.status()).as(output).isZero();
        String json = run.json();
        assertThat(number(json, "server-restart")).as(output).isPositive();
        assertThat(number(json, "staleWritesAccepted")).as(output).isZero();
        assertThat(number(json, "lostUpdates")).as(output).isZero();
        assertThat(number(json, "acceptedOverlaps")).as(output).isZero();
        assertThat(number(json, "leftovers")).as(output).isZero();
        assertThat(json).as(output).contains("\"passed\":true");
    }

    /**
     * Issue 17: partitions made by iptables inside a network namespace per worker (the worker's own
     * TCP stack sees a silent peer, not a proxy that stops forwarding), on Redis and on ZooKeeper.
     * Needs root, ip and iptables ({@code ./run-tests} installs the last two); without them the run
     * fails with the reason, since {@code --network iptables} was asked for.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"embedded:redis", "embedded"})
    @Timeout(value = 110, unit = TimeUnit.SECONDS)
    void torture_partitionsByIptables_pass(String uri) {
        Run run = torture(
                "--uri",
                uri,
                "--workers",
                "3",
                "--duration",
                "40s",
                "--faults",
                "partition,kill",
                "--network",
                "iptables",
                "--fenced",
                "--session-timeout",
                "2s",
                "--seed",
                "29");

        String output = run.output();
        assertThat(run.status()).as(output).isZero();
        assertThat(run.out()).contains("partitions: iptables DROP inside a network namespace per worker");
        String json = run.json();
        assertThat(number(json, "partition")).as(output).isPositive();
        assertThat(number(json, "staleWritesAccepted")).as(output).isZero();
        assertThat(number(json, "lostUpdates")).as(output).isZero();
        assertThat(number(json, "leftovers")).as(output).isZero();
        assertThat(json).as(output).contains("\"passed\":true");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void torture_partitionOnSentinel_isRefusedWithTheReason() {
        Run run = torture("--uri", "embedded:redis-sentinel", "--duration", "10s", "--faults", "partition");

        assertThat(run.status()).isNotZero();
        assertThat(run.err()).contains("partition is not available on Redis with Sentinel");
    }

    /**
     * Issue 17 item 4: every primitive under the same faults, short (25 s, 1 s sessions so that each
     * fault kind comes round): read-write locks and semaphores checked by the store's occupancy
     * checker (readers beside readers only, never more than the permits, stale holders refused),
     * multi-locks with every part's store fenced by that part's token.
     */
    @ParameterizedTest(name = "{0} on {1}")
    @CsvSource({
        "read-write, embedded",
        "semaphore, embedded",
        "multi, embedded",
        "read-write, embedded:redis",
        "semaphore, embedded:redis",
        "multi, embedded:redis"
    })
    @Timeout(value = 80, unit = TimeUnit.SECONDS)
    void torture_primitiveAllFaultsFenced_passes(String primitive, String uri) {
        Run run = torture(
                "--uri",
                uri,
                "--primitive",
                primitive,
                "--workers",
                "3",
                "--duration",
                "25s",
                "--faults",
                "pause,kill,server-restart,partition",
                "--network",
                "proxy",
                "--session-timeout",
                "1s",
                "--seed",
                "5",
                "--report",
                "none");

        String output = run.output();
        assertThat(run.status()).as(output).isZero();
        String json = run.json();
        assertThat(json).as(output).contains("\"primitive\":\"" + primitive + "\"");
        assertThat(number(json, "staleWritesAccepted")).as(output).isZero();
        assertThat(number(json, "acceptedOverlaps")).as(output).isZero();
        assertThat(number(json, "leftovers")).as(output).isZero();
        assertThat(number(json, "stuckWorkers")).as(output).isZero();
        assertThat(number(json, "operations")).as(output).isPositive();
        if (primitive.equals("semaphore")) {
            assertThat(json).as(output).contains("\"lostUpdates\":null");
        } else {
            assertThat(number(json, "lostUpdates")).as(output).isZero();
            assertThat(number(json, "shortfall")).as(output).isZero();
        }
        if (!primitive.equals("multi")) {
            assertThat(number(json, "entries")).as(output).isPositive();
            assertThat(number(json, "violations")).as(output).isZero();
            assertThat(number(json, "staleAccepted")).as(output).isZero();
            assertThat(number(json, "misuses")).as(output).isZero();
            assertThat(number(json, primitive.equals("semaphore") ? "maxPermits" : "maxReaders"))
                    .as(output)
                    .isBetween(1L, primitive.equals("semaphore") ? 2L : 3L);
        }
        for (String kind : new String[] {"pause", "kill", "server-restart", "partition"}) {
            assertThat(number(json, kind)).as("%s injected\n%s", kind, output).isPositive();
        }
        assertThat(json).as(output).contains("\"passed\":true");
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void torture_primitiveTheBackendLacks_isAUsageError() {
        Run run = torture("--uri", "embedded:memcached", "--primitive", "semaphore", "--duration", "5s");

        assertThat(run.status()).as(run.output()).isEqualTo(2);
        assertThat(run.err())
                .contains("Invalid value for option '--primitive'")
                .contains("semaphore is not supported by memcached")
                .contains("SEMAPHORE");
    }

    /** What one {@code dlock torture} printed, and its exit status. */
    private record Run(int status, String out, String err) {
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
