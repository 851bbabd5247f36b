package io.dlock.cli.internal.torture;

import io.dlock.cli.internal.report.Html;
import io.dlock.cli.internal.report.Timeline;
import io.dlock.testkit.FencedStore;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The HTML report of a torture run: the timeline of every critical section, fault and lock loss,
 * and the summary table.
 *
 * <p>A critical section is what one worker did with one grant: its accesses to the store with one
 * fencing token, from the first to the last. Its outcome is {@link Timeline.Outcome#OVERLAP} if
 * another section's accepted access fell between them, {@link Timeline.Outcome#REFUSED_STALE} if
 * the store refused one of them, otherwise accepted. A worker's {@code onLost} reports only the
 * token, so its marker sits at the last access with that token (or the worker's last access, if
 * it made none with it).
 *
 * <p>Memory: one entry per section while the timeline is built (the store already holds every
 * access); what is drawn is bounded by {@link Timeline}'s pixel rule.
 *
 * <p>Thread-safety: stateless.
 */
public final class TortureReport {

    private TortureReport() {}

    private static final class Section {
        final String client;
        final long token;
        final long first;
        long firstNanos;
        long last;
        long lastNanos;
        boolean refused;
        boolean overlapped;

        Section(String client, long token, long first, long firstNanos) {
            this.client = client;
            this.token = token;
            this.first = first;
            this.firstNanos = firstNanos;
            this.last = first;
            this.lastNanos = firstNanos;
        }
    }

    private record Key(String client, long token) {}

    /**
     * Builds the timeline of a run.
     *
     * @param recording what the run saw
     * @param title the timeline's heading
     * @return the timeline, ready to render
     */
    public static Timeline timeline(TortureRecording recording, String title) {
        List<FencedStore.Access> accesses = recording.store().accesses();
        Map<Key, Section> byKey = new HashMap<>();
        List<Section> sections = new ArrayList<>();
        for (FencedStore.Access a : accesses) {
            Key key = new Key(a.client(), a.token());
            Section s = byKey.get(key);
            if (s == null) {
                s = new Section(a.client(), a.token(), a.sequence(), a.nanoTime());
                byKey.put(key, s);
                sections.add(s);
            }
            s.last = a.sequence();
            s.lastNanos = a.nanoTime();
            s.refused |= !a.accepted();
        }
        // Sweep in store order: an accepted access interrupts every other section open at that point.
        Map<Key, Section> open = new LinkedHashMap<>();
        for (FencedStore.Access a : accesses) {
            Key key = new Key(a.client(), a.token());
            Section own = byKey.get(key);
            if (own != null && own.first == a.sequence()) {
                open.put(key, own);
            }
            if (a.accepted() && open.size() > 1) {
                for (Section other : open.values()) {
                    if (other != own) {
                        other.overlapped = true;
                    }
                }
            }
            if (own != null && own.last == a.sequence()) {
                open.remove(key);
            }
        }
        long start = recording.faultPhaseStartNanos();
        long end = recording.endNanos();
        if (!accesses.isEmpty()) {
            start = Math.min(start, accesses.get(0).nanoTime());
            end = Math.max(end, accesses.get(accesses.size() - 1).nanoTime());
        }
        if (end - start <= 0) {
            end = start + 1_000_000;
        }
        Timeline timeline = new Timeline(title, start, end);
        recording.workerLines().keySet().forEach(timeline::lane);
        Map<String, Long> lastAccess = new HashMap<>();
        for (Section s : sections) {
            Timeline.Outcome outcome = s.overlapped
                    ? Timeline.Outcome.OVERLAP
                    : s.refused ? Timeline.Outcome.REFUSED_STALE : Timeline.Outcome.ACCEPTED;
            timeline.section(s.client, s.firstNanos, s.lastNanos, outcome);
            lastAccess.put(s.client, s.lastNanos);
        }
        long t0 = recording.faultPhaseStartNanos();
        for (FaultRecord f : recording.faults()) {
            long from = t0 + f.atMillis() * 1_000_000;
            String lane = recording.workerLines().containsKey(f.target()) ? f.target() : null;
            timeline.fault(
                    lane,
                    from,
                    from + f.faultMillis() * 1_000_000,
                    f.kind().cliName() + " " + f.target() + " (" + f.detail() + ")",
                    f.recoveryMillis());
        }
        for (Map.Entry<String, List<String>> worker : recording.workerLines().entrySet()) {
            for (String line : worker.getValue()) {
                if (!line.startsWith(TortureWorker.LOST + " ")) {
                    continue;
                }
                String tokenText =
                        line.substring(TortureWorker.LOST.length() + 1).trim();
                Long at = null;
                try {
                    Section s = byKey.get(new Key(worker.getKey(), Long.parseLong(tokenText)));
                    at = s == null ? null : s.lastNanos;
                } catch (NumberFormatException e) {
                    // an unexpected line: place the marker at the worker's last access
                }
                if (at == null) {
                    at = lastAccess.getOrDefault(worker.getKey(), end);
                }
                timeline.loss(worker.getKey(), at, "token " + tokenText);
            }
        }
        return timeline;
    }

    /**
     * Renders the report page.
     *
     * @param result the run's result (verdict and table)
     * @param timeline the run's timeline
     * @return the page
     */
    public static String page(TortureResult result, Timeline timeline) {
        StringBuilder body = new StringBuilder();
        body.append("<p>")
                .append(Html.escape(result.config().primitive().cliName()))
                .append(" on ")
                .append(Html.escape(result.description()))
                .append(", ")
                .append(result.config().workers())
                .append(" workers, seed ")
                .append(result.config().seed())
                .append(": ");
        if (result.passed()) {
            body.append("<span class=\"pass\">PASS</span></p>\n");
        } else {
            body.append("<span class=\"fail\">FAIL</span></p>\n<ul class=\"problems\">");
            result.problems()
                    .forEach(p -> body.append("<li>").append(Html.escape(p)).append("</li>"));
            body.append("</ul>\n");
        }
        body.append(timeline.html());
        body.append("<p>")
                .append(timeline.sections())
                .append(" critical sections drawn as ")
                .append(timeline.bars())
                .append(" bars (sections closer than a pixel are merged; hover a bar for its counts).</p>\n");
        body.append("<h2>Faults</h2>\n<table class=\"faults\"><tr><th>#</th><th>at</th><th>fault</th><th>target</th>"
                + "<th>detail</th><th>blocked</th><th>recovered in</th><th>bound</th><th>verdict</th></tr>\n");
        int number = 0;
        for (FaultRecord f : result.faults()) {
            body.append("<tr><td>")
                    .append(++number)
                    .append("</td><td>")
                    .append(secs(f.atMillis()))
                    .append("</td><td>")
                    .append(Html.escape(f.kind().cliName()))
                    .append("</td><td>")
                    .append(Html.escape(f.target()))
                    .append("</td><td>")
                    .append(Html.escape(f.detail()))
                    .append("</td><td>")
                    .append(f.blockedMillis() < 0 ? "-" : secs(f.blockedMillis()))
                    .append("</td><td>")
                    .append(f.recoveryMillis() < 0 ? "not recovered" : secs(f.recoveryMillis()))
                    .append("</td><td>")
                    .append(secs(f.boundMillis()))
                    .append("</td><td>")
                    .append(f.cutShort() ? "cut short" : f.failed() ? "FAIL" : "ok")
                    .append("</td></tr>\n");
        }
        body.append("</table>\n<h2>Summary</h2>\n<pre class=\"summary\">")
                .append(Html.escape(result.table()))
                .append("</pre>\n<pre class=\"json\">")
                .append(Html.escape(result.json()))
                .append("</pre>\n");
        return Html.page("dlock torture: " + result.backend(), body.toString());
    }

    /**
     * Writes the report.
     *
     * @param file where
     * @param result the run's result
     * @param timeline its timeline
     * @return the absolute path written
     */
    public static Path write(Path file, TortureResult result, Timeline timeline) {
        return Html.write(file, page(result, timeline));
    }

    private static String secs(long millis) {
        return TortureRun.seconds(java.time.Duration.ofMillis(millis));
    }
}
