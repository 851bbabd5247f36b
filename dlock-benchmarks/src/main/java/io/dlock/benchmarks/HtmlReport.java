package io.dlock.benchmarks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The self-contained HTML report of {@code dlock bench}: per workload, a bar chart of every
 * implementation's figure (dlock, the floors and the anchors, coloured by role) and a chart of its
 * latency percentiles (p50 and p99), then the run's header and the table. The SVG is drawn here with
 * {@link SvgBars}, as the per-backend charts are: no script, no font, nothing fetched. Every string
 * from the run goes through {@link SvgBars#escape}.
 *
 * <p>Size: one bar per result and two per latency, so the page grows with the number of results
 * (tens), never with the operations measured.
 *
 * <p>Thread-safety: stateless.
 */
final class HtmlReport {

    private static final int CHART = 560;
    private static final int LABEL = 190;
    private static final int ROW = 20;

    private HtmlReport() {}

    private static String escape(String text) {
        return SvgBars.escape(text);
    }

    /**
     * The page.
     *
     * @param header the run's header (date, machine, sizes)
     * @param results every result, in run order
     * @param failure why the run stopped early, or empty
     * @return the page
     */
    static String page(Map<String, Object> header, List<Result> results, String failure) {
        StringBuilder b = new StringBuilder();
        b.append("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>dlock bench</title><style>")
                .append("body{font-family:sans-serif;margin:1.5em;color:#222}h2{font-size:1.15em;margin-top:1.6em}")
                .append("pre{background:#f6f6f6;padding:.8em;overflow-x:auto;font-size:12px}")
                .append("svg text{font-size:11px;font-family:sans-serif}.swatch{display:inline-block;width:12px;")
                .append("height:12px;margin:0 4px 0 12px;vertical-align:middle}.fail{color:#c62828}")
                .append("</style></head><body>\n<h1>dlock bench</h1>\n<p>");
        for (LockImpl.Role role : LockImpl.Role.values()) {
            b.append("<span class=\"swatch\" style=\"background:")
                    .append(SvgBars.colour(role))
                    .append("\"></span>")
                    .append(role.name().toLowerCase(Locale.ROOT));
        }
        b.append("</p>\n");
        if (!failure.isEmpty()) {
            b.append("<p class=\"fail\">The run failed: ")
                    .append(escape(failure))
                    .append("</p>\n");
        }
        List<String> workloads = new ArrayList<>();
        for (Result r : results) {
            if (!workloads.contains(r.workload())) {
                workloads.add(r.workload());
            }
        }
        for (String w : workloads) {
            List<Result> rows =
                    results.stream().filter(r -> r.workload().equals(w)).toList();
            b.append("<section class=\"workload\" data-workload=\"")
                    .append(escape(w))
                    .append("\">\n<h2>")
                    .append(escape(Report.TITLES.getOrDefault(w, w)))
                    .append("</h2>\n");
            String unit = w.equals("COST") ? "requests per cycle" : (w.equals("W4") ? "locks/s" : "ops/s");
            b.append(figureChart(rows, unit));
            if (!w.equals("COST") && rows.stream().anyMatch(r -> r.p99us() > 0)) { // COST measures no latency
                b.append(latencyChart(rows));
            }
            b.append("</section>\n");
        }
        b.append("<h2>Run</h2>\n<pre class=\"header\">")
                .append(escape(Report.toJson(header)))
                .append("</pre>\n");
        java.io.StringWriter table = new java.io.StringWriter();
        try (java.io.PrintWriter pw = new java.io.PrintWriter(table)) {
            Report.table(pw, results);
        }
        b.append("<h2>Table</h2>\n<pre class=\"table\">")
                .append(escape(table.toString()))
                .append("</pre>\n");
        b.append("</body></html>\n");
        return b.toString();
    }

    private static String figureChart(List<Result> rows, String unit) {
        double max = rows.stream()
                .mapToDouble(Result::primary)
                .filter(Double::isFinite)
                .max()
                .orElse(0);
        int height = rows.size() * ROW + 24;
        StringBuilder s = new StringBuilder();
        s.append(String.format(
                Locale.ROOT,
                "<svg class=\"figures\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
                        + " data-bars=\"%d\">\n",
                LABEL + CHART + 120,
                height,
                rows.size()));
        for (int i = 0; i < rows.size(); i++) {
            Result r = rows.get(i);
            double w = SvgBars.length(r.primary(), max, CHART);
            int y = i * ROW;
            String name = r.impl().backend().label() + " " + r.impl().label();
            s.append(SvgBars.text(0, y + 14, "", name))
                    .append(SvgBars.rect(
                            SvgBars.role(r.impl().role()),
                            "data-impl=\"" + escape(r.impl().label()) + "\"",
                            LABEL,
                            y + 2,
                            w,
                            ROW - 5,
                            SvgBars.colour(r.impl().role()),
                            "",
                            name + ": " + Report.format(r.primary()) + " " + unit))
                    .append(SvgBars.text(LABEL + Math.max(1, w) + 4, y + 14, "", Report.format(r.primary())))
                    .append('\n');
        }
        s.append(String.format(
                Locale.ROOT, "<text x=\"%d\" y=\"%d\">%s</text>\n</svg>\n", LABEL, height - 4, escape(unit)));
        return s.toString();
    }

    private static String latencyChart(List<Result> rows) {
        double max = rows.stream()
                .mapToDouble(Result::p99us)
                .filter(Double::isFinite)
                .max()
                .orElse(0);
        int row = ROW * 2;
        int height = rows.size() * row + 24;
        StringBuilder s = new StringBuilder();
        s.append(String.format(
                Locale.ROOT,
                "<svg class=\"latency\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
                        + " data-bars=\"%d\">\n",
                LABEL + CHART + 120,
                height,
                rows.size() * 2));
        for (int i = 0; i < rows.size(); i++) {
            Result r = rows.get(i);
            int y = i * row;
            String name = r.impl().backend().label() + " " + r.impl().label();
            s.append(SvgBars.text(0, y + 14, "", name));
            double[] values = {r.p50us(), r.p99us()};
            String[] names = {"p50", "p99"};
            for (int k = 0; k < 2; k++) {
                double w = SvgBars.length(values[k], max, CHART);
                int yy = y + 2 + k * (ROW - 2);
                s.append(SvgBars.rect(
                                names[k],
                                "",
                                LABEL,
                                yy,
                                w,
                                ROW - 6,
                                SvgBars.colour(r.impl().role()),
                                k == 0 ? "1" : "0.55",
                                name + " " + names[k] + ": " + Report.format(values[k]) + " us"))
                        .append(SvgBars.text(
                                LABEL + Math.max(1, w) + 4,
                                yy + 11,
                                "",
                                names[k] + " " + Report.format(values[k]) + " us"))
                        .append('\n');
            }
        }
        s.append(String.format(
                Locale.ROOT,
                "<text x=\"%d\" y=\"%d\">latency, microseconds (p50 solid, p99 light)</text>\n</svg>\n",
                LABEL,
                height - 4));
        return s.toString();
    }

    /**
     * Writes the page.
     *
     * @return the absolute path written
     * @throws UncheckedIOException if it cannot be written
     */
    static Path write(Path file, Map<String, Object> header, List<Result> results, String failure) {
        Path target = file.toAbsolutePath();
        try {
            Path dir = target.getParent();
            if (dir != null) {
                Files.createDirectories(dir);
            }
            Files.writeString(target, page(header, results, failure), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the report to " + target + ": " + e.getMessage(), e);
        }
        return target;
    }
}
