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

    /** Ratios of each dlock result to each anchor and floor of the same workload and server. */
    static Map<String, Double> ratios(Result r, List<Result> all) {
        Map<String, Double> out = new LinkedHashMap<>();
        if (r.impl().role() != LockImpl.Role.DLOCK) {
            return out;
        }
        for (Result other : all) {
            if (other.workload().equals(r.workload())
                    && other.impl().backend() == r.impl().backend()
                    && other.impl().role() != LockImpl.Role.DLOCK
                    && other.primary() > 0) {
                out.put(other.impl().label(), r.primary() / other.primary());
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
                Map<String, Double> ratios = ratios(r, results);
                if (r.workload().equals(w) && !ratios.isEmpty()) {
                    StringBuilder line = new StringBuilder();
                    ratios.forEach((k, v) -> line.append(line.length() == 0 ? "" : ", ")
                            .append(String.format(Locale.ROOT, "%.2fx %s", v, k)));
                    out.printf(
                            "  ratio %s: %s%s%n", r.impl().label(), line, cost ? " (requests; below 1 is fewer)" : "");
                }
            }
        }
        out.flush();
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
        if (v instanceof Double d) {
            if (d.isNaN()) {
                return "-";
            }
            return Math.abs(d) >= 100 ? String.format(Locale.ROOT, "%.0f", d) : String.format(Locale.ROOT, "%.2f", d);
        }
        return String.valueOf(v);
    }
}
