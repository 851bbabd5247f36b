package io.dlock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.entry;
import static org.assertj.core.api.Assertions.within;

import io.dlock.benchmarks.ServerStats.CommandStat;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class CommandStatsTest {

    private static final String BEFORE = "# Commandstats\r\n"
            + "cmdstat_evalsha:calls=10,usec=200,usec_per_call=20.00,rejected_calls=0,failed_calls=0\r\n"
            + "cmdstat_set:calls=20,usec=30,usec_per_call=1.50,rejected_calls=0,failed_calls=0\r\n"
            + "cmdstat_info:calls=3,usec=90,usec_per_call=30.00,rejected_calls=0,failed_calls=0\r\n";

    private static final String AFTER = "# Commandstats\r\n"
            + "cmdstat_evalsha:calls=110,usec=2200,usec_per_call=20.00,rejected_calls=0,failed_calls=0\r\n"
            + "cmdstat_set:calls=220,usec=330,usec_per_call=1.50,rejected_calls=0,failed_calls=0\r\n"
            + "cmdstat_time:calls=100,usec=40,usec_per_call=0.40,rejected_calls=0,failed_calls=0\r\n"
            + "cmdstat_get:calls=7,usec=7,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n"
            + "cmdstat_info:calls=5,usec=150,usec_per_call=30.00,rejected_calls=0,failed_calls=0\r\n";

    @Test
    void parse_readsCallsAndMicroseconds_byCommand() {
        Map<String, CommandStat> stats = ServerStats.parseCommandStats(BEFORE);

        assertThat(stats)
                .containsEntry("evalsha", new CommandStat(10, 200))
                .containsEntry("set", new CommandStat(20, 30))
                .containsEntry("info", new CommandStat(3, 90))
                .hasSize(3);
    }

    @Test
    void parse_aLineWithoutItsTime_isAnError_notAZero() {
        assertThatThrownBy(() -> ServerStats.parseCommandStats("cmdstat_set:calls=3,rejected_calls=0\r\n"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("cmdstat_set");
    }

    @Test
    void delta_countsWhatHappenedBetween_andLeavesOutTheProbesAndIdleCommands() {
        Map<String, CommandStat> before = ServerStats.parseCommandStats(BEFORE);
        Map<String, CommandStat> after = ServerStats.parseCommandStats(AFTER + "cmdstat_ping:calls=0,usec=0\r\n");

        assertThat(ServerStats.commandDelta(before, after))
                .containsEntry("evalsha", new CommandStat(100, 2000))
                .containsEntry("set", new CommandStat(200, 300))
                .containsEntry("time", new CommandStat(100, 40))
                .containsEntry("get", new CommandStat(7, 7))
                .doesNotContainKeys("info", "ping");
    }

    @Test
    void commandTimePerCycle_addsOnlyTheClientsOwnRequests_notTheCommandsInsideItsScripts() {
        Map<String, CommandStat> round1 =
                Map.of("evalsha", new CommandStat(200, 4000), "set", new CommandStat(200, 300));
        Map<String, CommandStat> round2 =
                Map.of("evalsha", new CommandStat(200, 5000), "set", new CommandStat(200, 300));

        List<Double> perCycle = Workloads.commandUsPerCycle(
                List.of(round1, round2), Workloads.ownShares(Map.of("evalsha", 200L), Map.of()), 100);

        assertThat(perCycle).containsExactly(40.0, 50.0);
        assertThat(Workloads.usecPerCallText(List.of(round1, round2))).isEqualTo("evalsha:22.50 set:1.50");
    }

    @Test
    void commandTimePerCycle_countsWhatExecRanOnce_inExecsTime() {
        // 100 cycles of MULTI, SET, TIME, EXEC and a script; EXEC's 400 us include SET's 200 and TIME's 50.
        RedisMonitor.Feed feed = new RedisMonitor.Feed("end");
        for (int i = 0; i < 100; i++) {
            feed.accept("1764400000.000001 [0 127.0.0.1:50000] \"MULTI\"");
            feed.accept("1764400000.000002 [0 127.0.0.1:50001] \"set\" \"other\" \"1\"");
            feed.accept("1764400000.000003 [0 127.0.0.1:50000] \"SET\" \"w1\" \"t\" \"NX\"");
            feed.accept("1764400000.000004 [0 127.0.0.1:50000] \"TIME\"");
            feed.accept("1764400000.000005 [0 127.0.0.1:50000] \"EXEC\"");
            feed.accept("1764400000.000006 [0 127.0.0.1:50000] \"EVALSHA\" \"abc\" \"1\" \"w1\" \"t\"");
            feed.accept("1764400000.000007 [0 lua] \"get\" \"w1\"");
            feed.accept("1764400000.000008 [0 127.0.0.1:50000] \"INFO\" \"commandstats\"");
        }
        assertThat(feed.accept("1764400000.000009 [0 127.0.0.1:50002] \"ECHO\" \"end\""))
                .isTrue();

        assertThat(feed.requests)
                .containsEntry("set", 200L)
                .containsEntry("exec", 100L)
                .doesNotContainKey("info");
        assertThat(feed.inTransactions).containsOnly(entry("set", 100L), entry("time", 100L));
        assertThat(feed.inScripts).containsOnly(entry("get", 100L));
        Map<String, CommandStat> round = Map.of(
                "multi", new CommandStat(100, 30),
                "set", new CommandStat(200, 400),
                "time", new CommandStat(100, 50),
                "exec", new CommandStat(100, 400),
                "evalsha", new CommandStat(100, 1000),
                "get", new CommandStat(100, 80));

        // multi 30 + half of set's 400 (the other half ran in EXEC) + exec 400 + evalsha 1000.
        assertThat(Workloads.commandUsPerCycle(
                        List.of(round), Workloads.ownShares(feed.requests, feed.inTransactions), 100))
                .singleElement()
                .satisfies(us -> assertThat(us).isCloseTo(16.3, within(1e-9)));
    }
}
