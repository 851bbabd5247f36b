package io.dlock.benchmarks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The charts of {@code dlock bench --charts DIR}: one standalone SVG per backend of a run, {@code
 * DIR/<backend>.svg}, for BENCHMARKS.md. A title (the backend, the run's date, rounds and machine), a
 * legend, then one panel per workload the run measured on that backend (W1, W2, W3, W5, W6, each
 * SCALE cell, COST in requests per cycle; W4, memory per held lock, is a table's figure), with one
 * bar per implementation coloured by role, labelled with its figure; under each of dlock's bars, its
 * ratios to the best anchor and to each floor, from {@link Report#ratios} (the median of the
 * per-round ratios, as the table prints them). A footer gives the command that produced the run.
 *
 * <p>Standalone: SVG 1.1 with its namespace, a white background, {@code font-family:sans-serif}, no
 * script, no link, nothing fetched; {@value #WIDTH} px wide. Every string from the run goes through
 * {@link SvgBars#escape}. Size: a line per result (two for dlock's) plus a few per workload, so it
 * grows with the results, never with the operations measured. Each bar carries {@code data-workload},
 * {@code data-impl}, {@code data-role} and {@code data-value} for tools and tests.
 *
 * <p>Thread-safety: stateless.
 */
final class Charts {

    /** The width of every chart, in pixels. */
    static final int WIDTH = 880;

    private static final int MARGIN = 12;
    private static final int LABEL = 150;
    private static final int BAR = 420;
    private static final int ROW = 20;
    private static final int RATIO_ROW = 15;
    private static final int LINE = 15;
    /** Characters of 11-12 px sans-serif that fit across the chart, with room to spare. */
    private static final int WRAP = 130;
    /** The same for 11 px ratio lines, which start at the bars. */
    private static final int RATIO_WRAP = 110;

    private static final Pattern SCALE = Pattern.compile("SCALE j=(\\d+) n=(\\d+)");
    private static final Pattern PLAIN_ARG = Pattern.compile("[A-Za-z0-9_@%+=:,./-]+");

    private Charts() {}

    /** Whether a workload gets a panel: all but W4, whose figure is bytes per held lock. */
    static boolean charted(String workload) {
        return !workload.equals("W4");
    }

    /**
     * One chart per backend that has a charted result, in the order the backends first appear.
     *
     * @param header the run's header (date, rounds, machine, {@code args})
     * @param results every result of the run
     * @param failure why the run stopped early, or empty
     * @return the SVG text by backend
     */
    static Map<Backend, String> svgs(Map<String, Object> header, List<Result> results, String failure) {
        Map<Backend, String> out = new LinkedHashMap<>();
        for (Result r : results) {
            Backend b = r.impl().backend();
            if (charted(r.workload()) && !out.containsKey(b)) {
                out.put(b, svg(b, header, results, failure));
            }
        }
        return out;
    }

    /**
     * Writes {@code dir/<backend>.svg} for each backend of the run, creating {@code dir}.
     *
     * @return the files written, absolute
     * @throws UncheckedIOException if one cannot be written
     */
    static List<Path> write(Path dir, Map<String, Object> header, List<Result> results, String failure) {
        Path target = dir.toAbsolutePath();
        List<Path> written = new ArrayList<>();
        Map<Backend, String> svgs = svgs(header, results, failure);
        try {
            Files.createDirectories(target);
            for (Map.Entry<Backend, String> e : svgs.entrySet()) {
                Path file = target.resolve(e.getKey().label() + ".svg");
                Files.writeString(file, e.getValue(), StandardCharsets.UTF_8);
                written.add(file);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the charts to " + target + ": " + e.getMessage(), e);
        }
        return written;
    }

    /**
     * The chart of one backend.
     *
     * @param backend the backend whose results it draws
     * @param header the run's header
     * @param all every result of the run (ratios are taken within the same workload and backend)
     * @param failure why the run stopped early, or empty
     * @return a standalone SVG document
     */
    static String svg(Backend backend, Map<String, Object> header, List<Result> all, String failure) {
        List<Result> mine = all.stream()
                .filter(r -> r.impl().backend() == backend && charted(r.workload()))
                .toList();
        List<String> workloads = new ArrayList<>();
        for (Result r : mine) {
            if (!workloads.contains(r.workload())) {
                workloads.add(r.workload());
            }
        }
        StringBuilder body = new StringBuilder();
        int y = 28;
        String title = "dlock bench: " + displayName(backend);
        body.append(SvgBars.text(MARGIN, y, "class=\"title\" font-size=\"18\" font-weight=\"bold\"", title))
                .append('\n');
        for (String line : wrap(subtitle(header), WRAP)) {
            y += LINE + 2;
            body.append(SvgBars.text(MARGIN, y, "class=\"subtitle\" fill=\"#555555\"", line))
                    .append('\n');
        }
        if (!failure.isEmpty()) {
            for (String line : wrap("The run failed: " + failure, WRAP)) {
                y += LINE;
                body.append(SvgBars.text(MARGIN, y, "class=\"failure\" fill=\"#c62828\"", line))
                        .append('\n');
            }
        }
        y += 24;
        body.append(legend(y));
        for (String line : wrap(
                "Under dlock's bars: its figure over the best anchor's and each floor's, the median of the"
                        + " per-round ratios; above 1 is faster (COST: below 1 is fewer requests).",
                WRAP)) {
            y += LINE;
            body.append(SvgBars.text(MARGIN, y, "class=\"note\" font-size=\"11\" fill=\"#555555\"", line))
                    .append('\n');
        }
        for (String w : workloads) {
            List<Result> rows =
                    mine.stream().filter(r -> r.workload().equals(w)).toList();
            y += 26;
            body.append(String.format(
                            Locale.ROOT,
                            "<g class=\"panel\" data-workload=\"%s\" data-bars=\"%d\">",
                            SvgBars.escape(w),
                            rows.size()))
                    .append('\n')
                    .append(SvgBars.text(
                            MARGIN, y, "class=\"panel-title\" font-size=\"13\" font-weight=\"bold\"", title(w, header)))
                    .append('\n');
            y += 4;
            double max = rows.stream()
                    .mapToDouble(Result::primary)
                    .filter(Double::isFinite)
                    .max()
                    .orElse(0);
            for (Result r : rows) {
                y += ROW;
                y = row(body, r, all, max, y);
            }
            body.append("</g>\n");
        }
        y += 22;
        body.append(String.format(
                        Locale.ROOT,
                        "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#dddddd\"/>",
                        MARGIN,
                        y - 14,
                        WIDTH - MARGIN,
                        y - 14))
                .append('\n');
        List<String> footer = wrap(command(header), WRAP);
        for (int i = 0; i < footer.size(); i++) {
            if (i > 0) {
                y += LINE;
            }
            body.append(SvgBars.text(MARGIN, y, "class=\"command\" font-size=\"11\" fill=\"#555555\"", footer.get(i)))
                    .append('\n');
        }
        int height = y + 12;
        return String.format(
                        Locale.ROOT,
                        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                                + "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\""
                                + " viewBox=\"0 0 %d %d\" style=\"font-family:sans-serif;font-size:12px\""
                                + " data-backend=\"%s\">\n",
                        WIDTH,
                        height,
                        WIDTH,
                        height,
                        backend.label())
                + "<title>" + SvgBars.escape(title) + "</title>\n"
                + String.format(
                        Locale.ROOT,
                        "<rect class=\"background\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n",
                        WIDTH,
                        height)
                + body
                + "</svg>\n";
    }

    /** Draws one result's bar (and dlock's ratio line) with its baseline at {@code y}; returns the last baseline. */
    private static int row(StringBuilder body, Result r, List<Result> all, double max, int y) {
        String role = SvgBars.role(r.impl().role());
        String impl = SvgBars.escape(r.impl().label());
        double length = SvgBars.length(r.primary(), max, BAR);
        String figure = figure(r);
        String data = String.format(
                Locale.ROOT,
                "data-workload=\"%s\" data-impl=\"%s\" data-role=\"%s\" data-value=\"%s\"",
                SvgBars.escape(r.workload()),
                impl,
                role,
                Double.isFinite(r.primary()) ? String.format(Locale.ROOT, "%.3f", r.primary()) : "");
        body.append(SvgBars.text(MARGIN, y - 4, "class=\"impl\"", r.impl().label()))
                .append(SvgBars.rect(
                        role,
                        data,
                        MARGIN + LABEL,
                        y - 15,
                        length,
                        14,
                        SvgBars.colour(r.impl().role()),
                        "",
                        r.impl().label() + ": " + figure + " " + unit(r.workload())))
                .append(SvgBars.text(
                        MARGIN + LABEL + Math.max(1, length) + 5,
                        y - 4,
                        "class=\"figure\" data-impl=\"" + impl + "\"",
                        figure))
                .append('\n');
        String ratios = ratioLine(r, all);
        int next = y;
        if (ratios.isEmpty()) {
            return next;
        }
        // COST's client CPU on a line of its own; a long line (many anchors and floors) wrapped.
        for (String part : ratios.split("; ")) {
            for (String line : wrap(part, RATIO_WRAP)) {
                next += RATIO_ROW;
                body.append(SvgBars.text(
                                MARGIN + LABEL,
                                next - 4,
                                "class=\"ratios\" data-impl=\"" + impl + "\" font-size=\"11\" fill=\"#333333\"",
                                line))
                        .append('\n');
            }
        }
        return next;
    }

    /** A bar's label: the figure; for COST also the client's CPU per cycle where the run measured it. */
    static String figure(Result r) {
        String figure = Double.isFinite(r.primary()) ? number(r.primary()) : "not counted";
        if (!r.higherIsBetter() && r.extra().get("clientCpuUsPerCycle") instanceof Number cpu) {
            figure += " · client CPU " + number(cpu.doubleValue()) + " µs";
        }
        return figure;
    }

    /**
     * dlock's ratios as the chart prints them, or empty for another role's result or where the run
     * has nothing to compare with: {@code 1.53× curator · 1.09× zk-floor}, the best anchor first
     * (marked when there are several), then each floor; for COST then {@code client CPU} ratios.
     */
    static String ratioLine(Result r, List<Result> all) {
        Map<String, Double> ratios = Report.ratios(r, all);
        Map<String, Double> cpu = Report.medians(Report.roundRatios(r, all, Report.CLIENT_CPU_ROUNDS));
        if (ratios.isEmpty() && cpu.isEmpty()) {
            return "";
        }
        List<Result> anchors = others(r, all, LockImpl.Role.ANCHOR);
        List<String> order = new ArrayList<>();
        best(r, anchors).ifPresent(b -> order.add(b.impl().label()));
        others(r, all, LockImpl.Role.FLOOR).forEach(f -> order.add(f.impl().label()));
        String mark = anchors.size() > 1 ? " (best anchor)" : "";
        List<String> parts = new ArrayList<>();
        List<String> cpuParts = new ArrayList<>();
        for (int i = 0; i < order.size(); i++) {
            String label = order.get(i);
            String suffix = i == 0 && !anchors.isEmpty() ? mark : "";
            Double ratio = ratios.get(label);
            if (ratio != null) {
                parts.add(ratio(ratio) + " " + label + suffix);
            }
            Double c = cpu.get(label);
            if (c != null) {
                cpuParts.add(ratio(c) + " " + label);
            }
        }
        String line = String.join(" · ", parts);
        if (!r.higherIsBetter() && !line.isEmpty()) {
            line = "requests " + line;
        }
        if (!cpuParts.isEmpty()) {
            line += (line.isEmpty() ? "" : "; ") + "client CPU " + String.join(" · ", cpuParts);
        }
        return line;
    }

    /** A ratio as the chart prints it: two decimals and a times sign, the digits of {@link Report}'s table. */
    static String ratio(double v) {
        return String.format(Locale.ROOT, "%.2f×", v);
    }

    /** Results of {@code role} in {@code r}'s workload and backend that ratios are taken against. */
    private static List<Result> others(Result r, List<Result> all, LockImpl.Role role) {
        if (r.impl().role() != LockImpl.Role.DLOCK) {
            return List.of();
        }
        return all.stream()
                .filter(o -> o.workload().equals(r.workload())
                        && o.impl().backend() == r.impl().backend()
                        && o.impl().role() == role
                        && o.primary() > 0)
                .toList();
    }

    /** The best of {@code anchors}: the highest figure, or for COST the fewest requests. */
    private static Optional<Result> best(Result r, List<Result> anchors) {
        Result best = null;
        for (Result a : anchors) {
            if (best == null || (r.higherIsBetter() ? a.primary() > best.primary() : a.primary() < best.primary())) {
                best = a;
            }
        }
        return Optional.ofNullable(best);
    }

    /** {@code 2,344} for figures of 100 and more, else {@code 2.00}; {@code -} for none. */
    static String number(double v) {
        if (!Double.isFinite(v)) {
            return "-";
        }
        return Math.abs(v) >= 100 ? String.format(Locale.ROOT, "%,.0f", v) : String.format(Locale.ROOT, "%.2f", v);
    }

    private static String unit(String workload) {
        return switch (workload) {
            case "W1", "W5" -> "cycles/s";
            case "W2", "W3", "W6" -> "hand-offs/s";
            case "COST" -> "requests per cycle";
            default -> "ops/s";
        };
    }

    /** A panel's title: what the workload does, with the run's sizes where the header has them. */
    static String title(String workload, Map<String, Object> header) {
        Matcher scale = SCALE.matcher(workload);
        if (scale.matches()) {
            return String.format(
                    Locale.ROOT,
                    "SCALE · %s worker JVM%s%s over %s lock name%s, a name at random per cycle · ops/s",
                    scale.group(1),
                    scale.group(1).equals("1") ? "" : "s",
                    value(header, "scaleThreads")
                            .map(t -> " × " + t + " threads")
                            .orElse(""),
                    scale.group(2),
                    scale.group(2).equals("1") ? "" : "s");
        }
        return switch (workload) {
            case "W1" -> "W1 · one thread, acquire + release of a free lock · cycles/s";
            case "W2" -> "W2 · " + value(header, "w2Threads").orElse("many") + " threads of one JVM on one lock"
                    + " · hand-offs/s";
            case "W3" -> "W3 · "
                    + value(header, "w3")
                            .map(v -> v.replace("x", " JVMs × ") + " threads")
                            .orElse("several JVMs")
                    + " on one lock · hand-offs/s";
            case "W5" -> "W5 · " + value(header, "w5Threads").orElse("many") + " threads over "
                    + value(header, "w5Names").orElse("many") + " lock names at random · cycles/s";
            case "W6" -> "W6 · " + value(header, "w6Threads").orElse("many") + " virtual threads over "
                    + value(header, "w6Locks").orElse("a few") + " locks (JDK 21+) · hand-offs/s";
            case "COST" -> "COST · server requests per uncontended cycle (fewer is better)";
            default -> workload;
        };
    }

    private static Optional<String> value(Map<String, Object> header, String key) {
        Object v = header.get(key);
        return v == null ? Optional.empty() : Optional.of(v.toString());
    }

    /** "2026-11-29 14:23 UTC · 5 interleaved rounds of 4s · 2 CPUs (AMD EPYC), 23 GiB, Linux · OpenJDK ..." */
    static String subtitle(Map<String, Object> header) {
        List<String> parts = new ArrayList<>();
        value(header, "date").map(Charts::when).ifPresent(parts::add);
        value(header, "rounds")
                .ifPresent(n -> parts.add(n
                        + (n.equals("1") ? " round" : " interleaved rounds")
                        + value(header, "duration")
                                .map(d -> " of " + duration(d))
                                .orElse("")));
        StringBuilder machine = new StringBuilder();
        value(header, "cpus").ifPresent(c -> machine.append(c).append(" CPUs"));
        value(header, "cpu").ifPresent(c -> machine.append(" (").append(c).append(')'));
        value(header, "memoryGiB").ifPresent(m -> machine.append(", ").append(m).append(" GiB"));
        value(header, "os").ifPresent(o -> machine.append(", ").append(o));
        if (machine.length() > 0) {
            parts.add(machine.toString().trim());
        }
        value(header, "java").ifPresent(parts::add);
        return String.join(" · ", parts);
    }

    private static String when(String date) {
        try {
            return DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm 'UTC'", Locale.ROOT)
                    .format(Instant.parse(date).atOffset(ZoneOffset.UTC));
        } catch (DateTimeParseException e) {
            return date;
        }
    }

    private static String duration(String iso) {
        try {
            long ms = Duration.parse(iso).toMillis();
            return ms % 1000 == 0 ? ms / 1000 + "s" : ms + "ms";
        } catch (DateTimeParseException e) {
            return iso;
        }
    }

    /** The command line that produced the run, shell-quoted, from the header's {@code args}. */
    static String command(Map<String, Object> header) {
        if (!(header.get("args") instanceof List<?> args)) {
            return "Command: not recorded (a run saved before dlock bench recorded its arguments)";
        }
        StringBuilder line = new StringBuilder("./dlock bench");
        for (Object a : args) {
            line.append(' ').append(shellQuoted(String.valueOf(a)));
        }
        return line.toString();
    }

    private static String shellQuoted(String arg) {
        return PLAIN_ARG.matcher(arg).matches() ? arg : "'" + arg.replace("'", "'\\''") + "'";
    }

    /**
     * {@code text} in lines of at most about {@code width} characters, broken at spaces, and inside a
     * longer word after its commas (an {@code --impls} list).
     */
    static List<String> wrap(String text, int width) {
        List<String> pieces = new ArrayList<>();
        for (String word : text.split(" ")) {
            while (word.length() > width) {
                int cut = word.lastIndexOf(',', width - 1);
                cut = cut < 1 ? width : cut + 1;
                pieces.add(word.substring(0, cut) + "\u0000");
                word = word.substring(cut);
            }
            pieces.add(word);
        }
        List<String> lines = new ArrayList<>();
        StringBuilder line = new StringBuilder();
        for (String piece : pieces) {
            boolean joined = piece.endsWith("\u0000");
            String p = joined ? piece.substring(0, piece.length() - 1) : piece;
            if (line.length() > 0 && line.length() + 1 + p.length() > width) {
                lines.add(line.toString());
                line.setLength(0);
            }
            if (line.length() > 0) {
                line.append(' ');
            }
            line.append(p);
            if (joined) {
                lines.add(line.toString());
                line.setLength(0);
            }
        }
        if (line.length() > 0 || lines.isEmpty()) {
            lines.add(line.toString());
        }
        return lines;
    }

    private static String displayName(Backend b) {
        return switch (b) {
            case ZOOKEEPER -> "ZooKeeper";
            case REDIS -> "Redis";
            case MEMCACHED -> "Memcached";
            case POSTGRESQL -> "PostgreSQL";
            case MARIADB -> "MariaDB";
            case ETCD -> "etcd";
        };
    }

    /** The legend: a swatch and a name per role, with its baseline at {@code y}. */
    private static String legend(int y) {
        StringBuilder s = new StringBuilder("<g class=\"legend\">");
        int x = MARGIN;
        for (LockImpl.Role role : LockImpl.Role.values()) {
            s.append(String.format(
                            Locale.ROOT,
                            "<rect class=\"swatch\" x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>",
                            x,
                            y - 11,
                            SvgBars.colour(role)))
                    .append(SvgBars.text(x + 17, y, "", SvgBars.role(role)));
            x += 90;
        }
        return s.append("</g>\n").toString();
    }
}
