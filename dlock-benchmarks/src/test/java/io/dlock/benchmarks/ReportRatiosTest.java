package io.dlock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ReportRatiosTest {

    private static Result result(String workload, LockImpl impl, double primary, Map<String, Object> extra) {
        return new Result(workload, impl, primary, 100, 1, Double.NaN, Double.NaN, 0, new LinkedHashMap<>(extra));
    }

    private static Result w1(LockImpl impl, List<Double> rounds) {
        double pooled =
                rounds.stream().mapToDouble(Double::doubleValue).average().orElseThrow();
        return result("W1", impl, pooled, Map.of(Report.OPS_ROUNDS, rounds));
    }

    @Test
    void ratios_withRounds_areTheMedianOfTheRoundByRoundRatios_notThePooledRatio() {
        // Round 1 of the floor ran slow: pooled, dlock is at 0.90x (2700 / 3000); round by round it
        // is at 1.0x in two rounds of three.
        Result dlock = w1(LockImpl.DLOCK_ZK, List.of(2000.0, 3000.0, 3100.0));
        Result floor = w1(LockImpl.ZK_FLOOR, List.of(1000.0, 3000.0, 3100.0 / 0.8));
        List<Result> all = List.of(dlock, floor);

        assertThat(Report.roundRatios(dlock, all, Report.OPS_ROUNDS).get("zk-floor"))
                .containsExactly(2.0, 1.0, 0.8);
        assertThat(Report.ratios(dlock, all).get("zk-floor")).isCloseTo(1.0, within(1e-9));
        assertThat(Report.ratios(floor, all))
                .as("only dlock's results get ratios")
                .isEmpty();
        assertThat(Report.json(dlock, all))
                .contains("\"ratios\":{\"zk-floor\":1.000}")
                .contains("\"roundRatios\":{\"zk-floor\":[2.000,1.000,0.800]}");
    }

    @Test
    void ratios_withoutRoundsOrWithDifferentCounts_fallBackToThePooledFigures() {
        Result dlock = result("COST", LockImpl.DLOCK_REDIS, 2.0, Map.of());
        Result floor = result("COST", LockImpl.REDIS_FLOOR, 4.0, Map.of());
        assertThat(Report.ratios(dlock, List.of(dlock, floor))).containsEntry("redis-floor", 0.5);

        Result two = w1(LockImpl.DLOCK_REDIS, List.of(100.0, 300.0));
        Result three = w1(LockImpl.REDIS_FLOOR, List.of(100.0, 100.0, 100.0));
        assertThat(Report.roundRatios(two, List.of(two, three), Report.OPS_ROUNDS))
                .isEmpty();
        assertThat(Report.ratios(two, List.of(two, three))).containsEntry("redis-floor", 2.0);
    }

    @Test
    void table_printsTheRoundsBehindEachRatio_andCostsClientCpuRatio() {
        Result dlock = w1(LockImpl.DLOCK_ZK, List.of(2000.0, 3000.0, 3100.0));
        Result floor = w1(LockImpl.ZK_FLOOR, List.of(1000.0, 3000.0, 3875.0));
        Result dlockCost =
                result("COST", LockImpl.DLOCK_ZK, 2.0, Map.of(Report.CLIENT_CPU_ROUNDS, List.of(110.0, 150.0, 120.0)));
        Result floorCost =
                result("COST", LockImpl.ZK_FLOOR, 2.0, Map.of(Report.CLIENT_CPU_ROUNDS, List.of(100.0, 100.0, 100.0)));
        StringWriter text = new StringWriter();

        Report.table(new PrintWriter(text), List.of(dlock, floor, dlockCost, floorCost));

        assertThat(text.toString())
                .contains("ratio dlock-zk: 1.00x zk-floor (median of rounds 2.00 / 1.00 / 0.80)")
                .contains("client CPU dlock-zk: 1.20x zk-floor (median of rounds 1.10 / 1.50 / 1.20)");
        assertThat(Report.json(dlockCost, List.of(dlock, floor, dlockCost, floorCost)))
                .contains("\"clientCpuRatios\":{\"zk-floor\":1.200}");
    }

    @Test
    void inRoundOrder_reversesEveryOtherRound_soNoImplementationAlwaysRunsFirst() {
        List<LockImpl> impls = List.of(LockImpl.DLOCK_ZK, LockImpl.CURATOR, LockImpl.ZK_FLOOR);

        assertThat(Workloads.inRoundOrder(impls, 1))
                .containsExactly(LockImpl.DLOCK_ZK, LockImpl.CURATOR, LockImpl.ZK_FLOOR);
        assertThat(Workloads.inRoundOrder(impls, 2))
                .containsExactly(LockImpl.ZK_FLOOR, LockImpl.CURATOR, LockImpl.DLOCK_ZK);
        assertThat(Workloads.inRoundOrder(impls, 3))
                .containsExactly(LockImpl.DLOCK_ZK, LockImpl.CURATOR, LockImpl.ZK_FLOOR);
        assertThat(impls)
                .as("the given list is left as it was")
                .containsExactly(LockImpl.DLOCK_ZK, LockImpl.CURATOR, LockImpl.ZK_FLOOR);
    }
}
