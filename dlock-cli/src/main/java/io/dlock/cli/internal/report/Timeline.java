package io.dlock.cli.internal.report;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * A timeline of critical sections drawn as SVG: one lane per worker, one bar per critical section
 * coloured by its outcome, faults as hatched spans (on one lane, or across all for a server fault)
 * with the time the lock took to recover, and lock losses as markers.
 *
 * <p>Bounded drawing: sections are folded into bars as they are added, so memory and page size
 * depend on the width in pixels, not on how many sections a run had. A section that starts less
 * than one pixel after its lane's last bar ends, with the same outcome, extends that bar; one with
 * another outcome that starts within the first pixel of the last bar joins it, and the bar takes
 * the worst outcome (overlap, then refused, then accepted). So every new bar starts at least one
 * pixel after the previous one: a lane holds at most {@link #WIDTH} + 1 bars, whatever the run's
 * length. Each bar says in {@code data-n} how many sections it stands for, and its tooltip how
 * many of each outcome.
 *
 * <p>Thread-safety: not thread-safe; fill and render from one thread.
 */
public final class Timeline {

    /** The width of the drawing area in pixels (the lane labels come on top of it). */
    public static final int WIDTH = 1000;

    private static final int LABEL = 70;
    private static final int LANE = 22;
    private static final int BAR = 14;
    private static final int AXIS = 24;
    private static final int FAULT_ROW = 16;

    /** How a critical section ended, worst last. */
    public enum Outcome {
        /** Every access was accepted and no other section's accepted access fell inside it. */
        ACCEPTED("accepted", "#43a047"),
        /** The store refused an access for a stale fencing token. */
        REFUSED_STALE("refused (stale token)", "#fb8c00"),
        /** Another section's accepted access fell inside it: mutual exclusion did not hold. */
        OVERLAP("overlap", "#d32f2f");

        private final String label;
        private final String colour;

        Outcome(String label, String colour) {
            this.label = label;
            this.colour = colour;
        }

        /** The outcome's name in the legend. */
        public String label() {
            return label;
        }

        /** The bar colour, as CSS. */
        public String colour() {
            return colour;
        }

        String cssName() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }
    }

    private static final class Bar {
        final double x0;
        double x1;
        Outcome outcome;
        final int[] counts = new int[Outcome.values().length];

        Bar(double x0, double x1, Outcome outcome) {
            this.x0 = x0;
            this.x1 = x1;
            this.outcome = outcome;
        }

        int n() {
            int n = 0;
            for (int c : counts) {
                n += c;
            }
            return n;
        }
    }

    private static final class Lane {
        final List<Bar> bars = new ArrayList<>();
        final int[] sections = new int[Outcome.values().length];
    }

    private record Fault(
            @Nullable String lane, double x0, double x1, String label, long recoveryMillis, double xs, double xr) {}

    private record Marker(String lane, double x, String label) {}

    private final String title;
    private final long startNanos;
    private final long endNanos;
    private final Map<String, Lane> lanes = new LinkedHashMap<>();
    private final List<Fault> faults = new ArrayList<>();
    private final List<Marker> markers = new ArrayList<>();

    /**
     * An empty timeline over {@code [startNanos, endNanos]} ({@link System#nanoTime()} values).
     *
     * @param title shown above the drawing (escaped)
     * @param startNanos the left edge
     * @param endNanos the right edge
     * @throws IllegalArgumentException if the end is not after the start
     */
    public Timeline(String title, long startNanos, long endNanos) {
        if (endNanos - startNanos <= 0) {
            throw new IllegalArgumentException(
                    "the timeline must end after it starts: " + startNanos + " .. " + endNanos);
        }
        this.title = title;
        this.startNanos = startNanos;
        this.endNanos = endNanos;
    }

    /**
     * Declares a lane; lanes are drawn in the order they are first named, here or by a section.
     *
     * @param name the worker's name
     */
    public void lane(String name) {
        lanes.computeIfAbsent(name, n -> new Lane());
    }

    /**
     * Adds one critical section to {@code lane}. Sections of a lane should come in the order they
     * started, as a run records them; one that does not is still counted and drawn.
     *
     * @param lane the worker's name
     * @param fromNanos the section's first access
     * @param toNanos the section's last access
     * @param outcome how it ended
     */
    public void section(String lane, long fromNanos, long toNanos, Outcome outcome) {
        Lane l = lanes.computeIfAbsent(lane, n -> new Lane());
        l.sections[outcome.ordinal()]++;
        double a = x(fromNanos);
        double b = Math.max(a, x(toNanos));
        Bar last = l.bars.isEmpty() ? null : l.bars.get(l.bars.size() - 1);
        if (last != null && a >= last.x0) {
            if (last.outcome == outcome && a - last.x1 < 1) {
                last.x1 = Math.max(last.x1, b);
                last.counts[outcome.ordinal()]++;
                return;
            }
            if (a - last.x0 < 1) {
                last.x1 = Math.max(last.x1, b);
                last.counts[outcome.ordinal()]++;
                if (outcome.compareTo(last.outcome) > 0) {
                    last.outcome = outcome;
                }
                return;
            }
        }
        Bar bar = new Bar(a, b, outcome);
        bar.counts[outcome.ordinal()]++;
        l.bars.add(bar);
    }

    /**
     * Adds a fault: a hatched span over one lane, or over every lane when {@code lane} is null (a
     * server fault), and the recovery after it.
     *
     * @param lane the worker it hit, or null for the server
     * @param fromNanos when it began
     * @param toNanos when it cleared
     * @param label what it was (escaped)
     * @param recoveryMillis how long after it cleared the lock was usable again; negative if it was
     *     not, or not measured
     */
    public void fault(@Nullable String lane, long fromNanos, long toNanos, String label, long recoveryMillis) {
        fault(lane, fromNanos, toNanos, label, toNanos, recoveryMillis);
    }

    /**
     * Adds a fault whose recovery is counted from {@code recoveryFromNanos} rather than from when
     * it cleared (the demo counts a paused holder's hand-over from the start of the pause).
     *
     * @param lane the worker it hit, or null for the server
     * @param fromNanos when it began
     * @param toNanos when it cleared
     * @param label what it was (escaped)
     * @param recoveryFromNanos where the recovery is counted from
     * @param recoveryMillis how long until the lock was usable again; negative if it was not
     */
    public void fault(
            @Nullable String lane,
            long fromNanos,
            long toNanos,
            String label,
            long recoveryFromNanos,
            long recoveryMillis) {
        double xr = recoveryMillis < 0 ? -1 : x(recoveryFromNanos + recoveryMillis * 1_000_000);
        double x0 = x(fromNanos);
        faults.add(new Fault(lane, x0, Math.max(x0, x(toNanos)), label, recoveryMillis, x(recoveryFromNanos), xr));
    }

    /**
     * Adds a lock loss marker ({@code onLost} fired) on {@code lane}.
     *
     * @param lane the worker
     * @param atNanos when (as well as the run knows it)
     * @param label what is known about it (escaped)
     */
    public void loss(String lane, long atNanos, String label) {
        lanes.computeIfAbsent(lane, n -> new Lane());
        markers.add(new Marker(lane, x(atNanos), label));
    }

    /** Sections added, over every lane. */
    public int sections() {
        int n = 0;
        for (Lane l : lanes.values()) {
            for (int c : l.sections) {
                n += c;
            }
        }
        return n;
    }

    /** Bars drawn, over every lane. */
    public int bars() {
        return lanes.values().stream().mapToInt(l -> l.bars.size()).sum();
    }

    /** Lanes drawn. */
    public int lanes() {
        return lanes.size();
    }

    /** Faults drawn. */
    public int faults() {
        return faults.size();
    }

    /** Loss markers drawn. */
    public int losses() {
        return markers.size();
    }

    private double x(long nanos) {
        double f = (double) (nanos - startNanos) / (double) (endNanos - startNanos);
        return Math.max(0, Math.min(WIDTH, f * WIDTH));
    }

    /**
     * Renders the timeline: a heading, the legend and one {@code <svg class="timeline">}.
     *
     * @return HTML
     */
    public String html() {
        StringBuilder s = new StringBuilder();
        s.append("<h2>").append(Html.escape(title)).append("</h2>\n");
        s.append("<p class=\"legend\">");
        for (Outcome o : Outcome.values()) {
            s.append("<span><span class=\"swatch\" style=\"background:")
                    .append(o.colour())
                    .append("\"></span>")
                    .append(Html.escape(o.label()))
                    .append("</span>");
        }
        s.append("<span><span class=\"swatch\" style=\"background:#90a4ae\"></span>fault</span>")
                .append("<span><span class=\"swatch\" style=\"background:#1e88e5\"></span>recovery</span>")
                .append("<span>&#9660; lock lost</span></p>\n");
        List<String> names = new ArrayList<>(lanes.keySet());
        int height = AXIS + names.size() * LANE + FAULT_ROW * 2 + 4;
        s.append(String.format(
                Locale.ROOT,
                "<svg class=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\""
                        + " viewBox=\"0 0 %d %d\" data-lanes=\"%d\" data-sections=\"%d\" data-bars=\"%d\">\n",
                LABEL + WIDTH + 10,
                height,
                LABEL + WIDTH + 10,
                height,
                names.size(),
                sections(),
                bars()));
        s.append(
                "<defs><pattern id=\"hatch\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\""
                        + " patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#cfd8dc\"/>"
                        + "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#90a4ae\" stroke-width=\"3\"/></pattern></defs>\n");
        axis(s, height);
        int lanesBottom = AXIS + names.size() * LANE;
        for (Fault f : faults) {
            int index = f.lane() == null ? -1 : names.indexOf(f.lane());
            int y = index < 0 ? AXIS : AXIS + index * LANE;
            int h = index < 0 ? names.size() * LANE : LANE;
            s.append(String.format(
                    Locale.ROOT,
                    "<g class=\"fault\"><rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"url(#hatch)\""
                            + " opacity=\"0.8\"><title>%s</title></rect>",
                    LABEL + f.x0(),
                    y,
                    Math.max(2, f.x1() - f.x0()),
                    h,
                    Html.escape("#" + (faults.indexOf(f) + 1) + " " + f.label())));
            String recovery = f.recoveryMillis() < 0 ? "not recovered" : "recovered in " + seconds(f.recoveryMillis());
            if (f.xr() >= 0) {
                s.append(String.format(
                        Locale.ROOT,
                        "<rect class=\"recovery\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"3\" fill=\"#1e88e5\">"
                                + "<title>%s</title></rect>",
                        LABEL + f.xs(),
                        y + h - 3,
                        Math.max(1, f.xr() - f.xs()),
                        Html.escape(recovery)));
            }
            // Under the lanes only a number and the recovery, in two rows, so that labels of faults
            // close together stay readable; the whole label is the tooltip and the report's table.
            int number = faults.indexOf(f) + 1;
            s.append(String.format(
                    Locale.ROOT,
                    "<text x=\"%.1f\" y=\"%d\"><title>%s</title>#%d %s</text></g>\n",
                    LABEL + f.x0(),
                    lanesBottom + 12 + ((number - 1) % 2) * FAULT_ROW,
                    Html.escape("#" + number + " " + f.label() + ", " + recovery),
                    number,
                    f.recoveryMillis() < 0 ? "not recovered" : seconds(f.recoveryMillis())));
        }
        for (int i = 0; i < names.size(); i++) {
            String name = names.get(i);
            Lane lane = java.util.Objects.requireNonNull(lanes.get(name));
            int y = AXIS + i * LANE;
            int total = 0;
            for (int c : lane.sections) {
                total += c;
            }
            s.append(String.format(
                    Locale.ROOT,
                    "<g class=\"lane\" data-lane=\"%s\" data-sections=\"%d\"><text x=\"0\" y=\"%d\">%s</text>\n",
                    Html.escape(name),
                    total,
                    y + BAR,
                    Html.escape(name)));
            for (Bar b : lane.bars) {
                int[] c = b.counts;
                s.append(String.format(
                        Locale.ROOT,
                        "<rect class=\"bar %s\" data-n=\"%d\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\""
                                + " fill=\"%s\"><title>%d section(s): %d accepted, %d refused, %d overlap</title></rect>\n",
                        b.outcome.cssName(),
                        b.n(),
                        LABEL + b.x0,
                        y + (LANE - BAR) / 2,
                        Math.max(1, b.x1 - b.x0),
                        BAR,
                        b.outcome.colour(),
                        b.n(),
                        c[Outcome.ACCEPTED.ordinal()],
                        c[Outcome.REFUSED_STALE.ordinal()],
                        c[Outcome.OVERLAP.ordinal()]));
            }
            s.append("</g>\n");
        }
        for (Marker m : markers) {
            int y = AXIS + names.indexOf(m.lane()) * LANE;
            double x = LABEL + m.x();
            s.append(String.format(
                    Locale.ROOT,
                    "<path class=\"loss\" d=\"M%.1f %d l-5 -8 h10 z\" fill=\"#000\"><title>%s</title></path>\n",
                    x,
                    y + (LANE - BAR) / 2 + 2,
                    Html.escape("lock lost: " + m.label())));
        }
        s.append("</svg>\n");
        return s.toString();
    }

    private void axis(StringBuilder s, int height) {
        double seconds = (endNanos - startNanos) / 1e9;
        double step = 1;
        for (double candidate : new double[] {0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800}) {
            step = candidate;
            if (seconds / candidate <= 12) {
                break;
            }
        }
        s.append("<g class=\"axis\">");
        for (int i = 0; i * step <= seconds && i < 100; i++) {
            double x = LABEL + i * step / seconds * WIDTH;
            s.append(String.format(
                    Locale.ROOT,
                    "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e0e0e0\"/>"
                            + "<text x=\"%.1f\" y=\"12\">%s</text>",
                    x,
                    AXIS - 6,
                    x,
                    height - FAULT_ROW * 2,
                    x + 2,
                    step < 1 ? String.format(Locale.ROOT, "%.1fs", i * step) : ((long) (i * step)) + "s"));
        }
        s.append("</g>\n");
    }

    static String seconds(long millis) {
        return String.format(Locale.ROOT, "%.1fs", millis / 1000.0);
    }

    @Override
    public String toString() {
        return "Timeline[" + title + ", " + lanes() + " lanes, " + sections() + " sections in " + bars() + " bars]";
    }
}
