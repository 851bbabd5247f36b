package io.dlock.benchmarks;

import io.dlock.cli.internal.report.Html;
import java.util.Locale;

/**
 * The drawing that the HTML report ({@link HtmlReport}) and the per-backend charts ({@link Charts})
 * share: the colour of each role, the escaping of every string from a run, and one horizontal bar.
 * Both draw bars the same way, so that a chart in the docs and the report of the same run look
 * alike.
 *
 * <p>Thread-safety: stateless.
 */
final class SvgBars {

    private SvgBars() {}

    /**
     * {@code text} for XML and HTML text and attribute values ({@link Html#escape}: markup
     * characters become entities, characters XML cannot hold become U+FFFD).
     */
    static String escape(String text) {
        return Html.escape(text);
    }

    /** The fill of a role's bars. */
    static String colour(LockImpl.Role role) {
        return switch (role) {
            case DLOCK -> "#1e88e5";
            case ANCHOR -> "#8e24aa";
            case FLOOR -> "#9e9e9e";
        };
    }

    /** The role's name in classes, data attributes and legends: {@code dlock}, {@code anchor}, {@code floor}. */
    static String role(LockImpl.Role role) {
        return role.name().toLowerCase(Locale.ROOT);
    }

    /**
     * The length of {@code value}'s bar when {@code max} fills {@code full}: 0 for a value that is
     * not finite or a chart with nothing to scale by. Draw it at least 1 wide ({@link #rect}).
     */
    static double length(double value, double max, double full) {
        return max <= 0 || !Double.isFinite(max) || !Double.isFinite(value) || value <= 0 ? 0 : value / max * full;
    }

    /**
     * One bar: {@code <rect class="bar <kind>" <data> x y width height fill [opacity]><title>..</title></rect>}.
     *
     * @param kind the second class: a role's name, or {@code p50}/{@code p99}
     * @param data further attributes, already escaped (for example {@code data-impl="curator"}), or empty
     * @param length the bar's length from {@link #length}; drawn at least 1 wide so that a zero shows
     * @param opacity the fill's opacity, or empty for opaque
     * @param title the tooltip, unescaped
     */
    static String rect(
            String kind,
            String data,
            double x,
            double y,
            double length,
            double height,
            String fill,
            String opacity,
            String title) {
        return String.format(
                Locale.ROOT,
                "<rect class=\"bar %s\"%s x=\"%s\" y=\"%s\" width=\"%.1f\" height=\"%s\" fill=\"%s\"%s><title>%s</title></rect>",
                escape(kind),
                data.isEmpty() ? "" : " " + data,
                number(x),
                number(y),
                Math.max(1, length),
                number(height),
                fill,
                opacity.isEmpty() ? "" : " opacity=\"" + opacity + "\"",
                escape(title));
    }

    /** {@code <text x y [attributes]>content</text>}, the content escaped here. */
    static String text(double x, double y, String attributes, String content) {
        return String.format(
                Locale.ROOT,
                "<text x=\"%s\" y=\"%s\"%s>%s</text>",
                number(x),
                number(y),
                attributes.isEmpty() ? "" : " " + attributes,
                escape(content));
    }

    /** A coordinate without a needless ".0": {@code 14}, {@code 14.5}. */
    static String number(double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e9 ? Long.toString((long) v) : String.format(Locale.ROOT, "%.1f", v);
    }
}
