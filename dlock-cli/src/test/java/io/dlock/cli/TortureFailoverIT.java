package io.dlock.cli;

import static io.dlock.cli.TortureRuns.number;
import static io.dlock.cli.TortureRuns.torture;
import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.cli.TortureRuns.Run;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Server-side failures in a row: ZooKeeper restarted back to back, and Redis Sentinel failovers with
 * and without {@code waitReplicas}; partitions on Sentinel are refused with the reason.
 */
@Tag("torture")
class TortureFailoverIT {

    /**
     * Three ZooKeeper restarts back to back, each down longer than the session timeout
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

        String json = TortureRuns.assertPassedFenced(run);
        String output = run.output();
        assertThat(number(json, "server-restart")).as(output).isEqualTo(3);
        assertThat(number(json, "inBound")).as(output).isEqualTo(3);
        assertThat(number(json, "restartBoundMs")).as(output).isEqualTo(3_000);
        assertThat(json).as(output).contains("\"backToBack\":true");
    }

    /**
     * Redis with Sentinel (a master, one replica, one Sentinel), the master killed under
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

        String json = TortureRuns.assertPassedFenced(run);
        String output = run.output();
        assertThat(number(json, "server-restart")).as(output).isPositive();
        assertThat(number(json, "acceptedOverlaps")).as(output).isZero();
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void torture_partitionOnSentinel_isRefusedWithTheReason() {
        Run run = torture("--uri", "embedded:redis-sentinel", "--duration", "10s", "--faults", "partition");

        assertThat(run.status()).isNotZero();
        assertThat(run.err()).contains("partition is not available on Redis with Sentinel");
    }
}
