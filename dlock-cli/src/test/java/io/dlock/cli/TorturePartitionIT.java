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
 * Partitions made by iptables inside a network namespace per worker, and a primitive the backend
 * lacks refused as a usage error.
 */
@Tag("torture")
class TorturePartitionIT {

    /**
     * Partitions made by iptables inside a network namespace per worker (the worker's own
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

        String json = TortureRuns.assertPassedFenced(run);
        assertThat(run.out()).contains("partitions: iptables DROP inside a network namespace per worker");
        assertThat(number(json, "partition")).as(run.output()).isPositive();
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
}
