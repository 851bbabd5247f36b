package io.dlock.benchmarks;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Prints results as a table (one section per workload, with dlock's ratios against each anchor
 * and floor of the same server) and as JSON lines, one object per result.
 *
 * <p>Thread-safety: none; one per run.
 */
final class Report {
    static final Map<String, String> TITLES = Map.of(
            "W1", "W1 uncontended: 1 thread, acquire+release cycles/s; latency = whole cycle",
            "W2", "W2 contended in one JVM: hand-offs/s; latency = wait for the lock",
            "W3", "W3 contended across JVMs: hand-offs/s; latency = wait for the lock",
            "W4", "W4 many locks: acquire all, then release all; locks/s over both phases",
            "W5", "W5 many names: threads of one JVM over many lock names at random; cycles/s; latency = wait",
            "W6", "W6 virtual threads over a few locks (JDK 21+): hand-offs/s; latency = wait for the lock",
            "COST", "COST server requests per uncontended cycle (lower is better)");

    private Report() {}

    /** {@link Result#extra()} key of a result's figure in each measured round, in round order. */
    static final String OPS_ROUNDS = "opsPerSecRounds";
    /** {@link Result#extra()} key of COST's client CPU microseconds per cycle in each round. */
    static final String CLIENT_CPU_ROUNDS = "clientCpuUsRounds";

    /**
     * dlock's figure over each anchor's and floor's of the same workload and server: the median of
     * the per-round ratios where both have the same rounds ({@link #OPS_ROUNDS}), else the ratio of
     * the pooled figures (COST's requests, W4).
     */
    static Map<String, Double> ratios(Result r, List<Result> all) {
        Map<String, Double> out = new LinkedHashMap<>();
        Map<String, List<Double>> byRound = roundRatios(r, all, OPS_ROUNDS);
        for (Result other : comparable(r, all)) {
            List<Double> rounds = byRound.getOrDefault(other.impl().label(), List.of());
            out.put(other.impl().label(), rounds.isEmpty() ? r.primary() / other.primary() : Workloads.median(rounds));
        }
        return out;
    }

    /**
     * The ratios of {@code r}'s per-round figures under {@code key} to each comparable result's, round
     * by round, by that result's label; only where both have such figures for the same number of
     * rounds (rounds interleave, so round i of each ran within one pass over the implementations).
     */
    static Map<String, List<Double>> roundRatios(Result r, List<Result> all, String key) {
        Map<String, List<Double>> out = new LinkedHashMap<>();
        List<Double> mine = rounds(r, key);
        for (Result other : comparable(r, all)) {
            List<Double> theirs = rounds(other, key);
            if (!mine.isEmpty() && mine.size() == theirs.size()) {
                List<Double> ratios = new ArrayList<>(mine.size());
                for (int i = 0; i < mine.size(); i++) {
                    ratios.add(mine.get(i) / theirs.get(i));
                }
                out.put(other.impl().label(), ratios);
            }
        }
        return out;
    }

    /** The anchors and floors of {@code r}'s workload and server, if {@code r} is dlock's. */
    private static List<Result> comparable(Result r, List<Result> all) {
        List<Result> out = new ArrayList<>();
        if (r.impl().role() != LockImpl.Role.DLOCK) {
            return out;
        }
        for (Result other : all) {
            if (other.workload().equals(r.workload())
                    && other.impl().backend() == r.impl().backend()
                    && other.impl().role() != LockImpl.Role.DLOCK
                    && other.primary() > 0) {
                out.add(other);
            }
        }
        return out;
    }

    private static List<Double> rounds(Result r, String key) {
        List<Double> out = new ArrayList<>();
        if (r.extra().get(key) instanceof List<?> list) {
            for (Object v : list) {
                out.add(((Number) v).doubleValue());
            }
        }
        return out;
    }

    static void table(PrintWriter out, List<Result> results) {
        List<String> workloads = new ArrayList<>();
        for (Result r : results) {
            if (!workloads.contains(r.workload())) {
                workloads.add(r.workload());
            }
        }
        for (String w : workloads) {
            out.println();
            out.println(TITLES.getOrDefault(w, w));
            boolean cost = w.equals("COST");
            out.printf(
                    Locale.ROOT,
                    "  %-10s %-17s %12s %10s %10s %9s  %s%n",
                    "backend",
                    "impl",
                    cost ? "req/cycle" : (w.equals("W4") ? "locks/s" : "ops/s"),
                    "p50 us",
                    "p99 us",
                    "overlaps",
                    "more");
            for (Result r : results) {
                if (!r.workload().equals(w)) {
                    continue;
                }
                StringBuilder more = new StringBuilder();
                r.extra()
                        .forEach((k, v) ->
                                more.append(k).append('=').append(format(v)).append(' '));
                out.printf(
                        Locale.ROOT,
                        "  %-10s %-17s %12s %10s %10s %9d  %s%n",
                        r.impl().backend().label(),
                        r.impl().label(),
                        format(r.primary()),
                        format(r.p50us()),
                        format(r.p99us()),
                        r.overlaps(),
                        more.toString().trim());
            }
            for (Result r : results) {
                if (!r.workload().equals(w)) {
                    continue;
                }
                Map<String, Double> ratios = ratios(r, results);
                if (!ratios.isEmpty()) {
                    out.printf(
                            "  ratio %s: %s%s%n",
                            r.impl().label(),
                            ratioLine(ratios, roundRatios(r, results, OPS_ROUNDS)),
                            cost ? " (requests; below 1 is fewer)" : "");
                }
                Map<String, List<Double>> cpu = roundRatios(r, results, CLIENT_CPU_ROUNDS);
                if (!cpu.isEmpty()) {
                    out.printf("  client CPU %s: %s%n", r.impl().label(), ratioLine(medians(cpu), cpu));
                }
            }
        }
        out.flush();
    }

    /** "0.91x zk-floor (median of rounds 1.09 / 0.80 / 0.91), ..." */
    private static String ratioLine(Map<String, Double> ratios, Map<String, List<Double>> byRound) {
        StringBuilder line = new StringBuilder();
        ratios.forEach((k, v) -> {
            line.append(line.length() == 0 ? "" : ", ").append(String.format(Locale.ROOT, "%.2fx %s", v, k));
            List<Double> rounds = byRound.getOrDefault(k, List.of());
            if (rounds.size() > 1) {
                line.append(" (median of rounds ").append(format(rounds)).append(')');
            }
        });
        return line.toString();
    }

    /** The median of each list, by the same key. */
    static Map<String, Double> medians(Map<String, List<Double>> byRound) {
        Map<String, Double> out = new LinkedHashMap<>();
        byRound.forEach((k, v) -> out.put(k, Workloads.median(v)));
        return out;
    }

    static String json(Result r, List<Result> all) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("workload", r.workload());
        m.put("backend", r.impl().backend().label());
        m.put("impl", r.impl().label());
        m.put("role", r.impl().role().name().toLowerCase(Locale.ROOT));
        m.put(r.workload().equals("COST") ? "requestsPerCycle" : "opsPerSec", r.primary());
        m.put("ops", r.ops());
        m.put("seconds", r.seconds());
        m.put("p50us", r.p50us());
        m.put("p99us", r.p99us());
        m.put("overlaps", r.overlaps());
        m.putAll(r.extra());
        m.put("ratios", ratios(r, all));
        Map<String, List<Double>> byRound = roundRatios(r, all, OPS_ROUNDS);
        if (!byRound.isEmpty()) {
            m.put("roundRatios", byRound);
        }
        Map<String, List<Double>> cpu = roundRatios(r, all, CLIENT_CPU_ROUNDS);
        if (!cpu.isEmpty()) {
            m.put("clientCpuRatios", medians(cpu));
            m.put("clientCpuRoundRatios", cpu);
        }
        return toJson(m);
    }

    static String toJson(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Map<?, ?> map) {
            StringBuilder sb = new StringBuilder("{");
            map.forEach((k, x) -> sb.append(sb.length() == 1 ? "" : ",")
                    .append(quote(k.toString()))
                    .append(':')
                    .append(toJson(x)));
            return sb.append('}').toString();
        }
        if (v instanceof List<?> list) {
            StringBuilder sb = new StringBuilder("[");
            list.forEach(x -> sb.append(sb.length() == 1 ? "" : ",").append(toJson(x)));
            return sb.append(']').toString();
        }
        if (v instanceof Double d) {
            return d.isNaN() || d.isInfinite() ? "null" : String.format(Locale.ROOT, "%.3f", d);
        }
        if (v instanceof Number || v instanceof Boolean) {
            return v.toString();
        }
        return quote(v.toString());
    }

    private static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        return sb.append('"').toString();
    }

    static String format(Object v) {
        if (v instanceof List<?> list) {
            StringBuilder sb = new StringBuilder();
            list.forEach(x -> sb.append(sb.length() == 0 ? "" : " / ").append(format(x)));
            return sb.toString();
        }
        if (v instanceof Double d) {
            if (d.isNaN()) {
                return "-";
            }
            return Math.abs(d) >= 100 ? String.format(Locale.ROOT, "%.0f", d) : String.format(Locale.ROOT, "%.2f", d);
        }
        return String.valueOf(v);
    }
}
