package io.dlock.cli.internal;

import io.dlock.cli.internal.report.Html;
import io.dlock.cli.internal.report.Timeline;
import java.nio.file.Path;
import java.util.List;

/**
 * The HTML report of {@code dlock demo}: the verdict, one timeline per round (a lane per worker,
 * each sale a bar from its {@code GET} to its {@code PUT}: accepted, an overwrite of another's
 * sale, or refused for a stale token), the kill and the pause as faults, and the summary table.
 *
 * <p>Thread-safety: stateless.
 */
public final class DemoReport {

    private DemoReport() {}

    /**
     * Renders the page.
     *
     * @param server the lock server, as the narration names it
     * @param results the rounds' results
     * @param timelines the rounds' timelines
     * @return the page
     */
    public static String page(String server, List<RoundResult> results, List<Timeline> timelines) {
        StringBuilder body = new StringBuilder();
        boolean passed = results.stream().allMatch(RoundResult::passed);
        body.append("<p>Lock server: ")
                .append(Html.escape(server))
                .append(". ")
                .append(passed ? "<span class=\"pass\">PASS</span>" : "<span class=\"fail\">FAIL</span>")
                .append("</p>\n");
        if (!passed) {
            body.append("<ul class=\"problems\">");
            results.stream()
                    .flatMap(r -> r.problems().stream())
                    .forEach(p -> body.append("<li>").append(Html.escape(p)).append("</li>"));
            body.append("</ul>\n");
        }
        body.append("<p>A bar is one sale: from the worker's GET of the stock to its PUT. Red: the PUT overwrote a"
                + " stock another worker had changed since (a lost update).</p>\n");
        for (Timeline t : timelines) {
            body.append(t.html());
        }
        body.append("<h2>Summary</h2>\n<pre class=\"summary\">")
                .append(Html.escape(SummaryTable.render(results)))
                .append("</pre>\n");
        return Html.page("dlock demo", body.toString());
    }

    /**
     * Writes the page.
     *
     * @param file where
     * @param server the lock server, as the narration names it
     * @param results the rounds' results
     * @param timelines the rounds' timelines
     * @return the absolute path written
     */
    public static Path write(Path file, String server, List<RoundResult> results, List<Timeline> timelines) {
        return Html.write(file, page(server, results, timelines));
    }
}
