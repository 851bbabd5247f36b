package io.dlock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** The bench's HTML report from known results, and what a run that cannot start says to do. */
class BenchReportTest {

    private static Result result(String workload, String impl, double primary, double p50, double p99) {
        return new Result(workload, LockImpl.parse(impl), primary, 1000, 1.0, p50, p99, 0, new LinkedHashMap<>());
    }

    private static int count(String text, String needle) {
        int n = 0;
        for (int i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) {
            n++;
        }
        return n;
    }

    @Test
    void page_twoWorkloads_oneBarPerResultAndTwoPerLatency() {
        List<Result> results = List.of(
                result("W1", "dlock-redis", 4000, 240, 900),
                result("W1", "redisson", 3000, 320, 1200),
                result("W1", "redis-floor", 5000, 190, 700),
                result("COST", "dlock-redis", 3, 0, 0),
                result("COST", "redis-floor", 2, 0, 0));

        String page = HtmlReport.page(Map.of("date", "today"), results, "");

        assertThat(count(page, "<section class=\"workload\"")).isEqualTo(2);
        assertThat(page)
                .contains("<svg class=\"figures\"")
                .contains("data-bars=\"3\"")
                .contains("data-bars=\"6\"");
        assertThat(count(page, "<svg class=\"latency\""))
                .as("no latency chart for COST")
                .isEqualTo(1);
        assertThat(count(page, "<rect class=\"bar dlock\"")).isEqualTo(2);
        assertThat(count(page, "<rect class=\"bar anchor\"")).isEqualTo(1);
        assertThat(count(page, "<rect class=\"bar floor\"")).isEqualTo(2);
        assertThat(count(page, "<rect class=\"bar p50\"")).isEqualTo(3);
        assertThat(count(page, "<rect class=\"bar p99\"")).isEqualTo(3);
        // The largest figure fills the chart; the others are in proportion.
        assertThat(page).contains("width=\"560.0\"").contains("width=\"448.0\"").contains("width=\"336.0\"");
        // Self-contained: no script, no stylesheet or image fetched (the only URL is the SVG namespace).
        assertThat(page)
                .doesNotContain("<script")
                .doesNotContain("<link")
                .doesNotContain("src=")
                .doesNotContain("url(http");
    }

    @Test
    void page_failureText_escaped() {
        String page = HtmlReport.page(Map.of("cpu", "<x>"), List.of(), "boom <script>alert(1)</script> & 'q'");

        assertThat(page).doesNotContain("<script>").doesNotContain("<x>");
        assertThat(page).contains("boom &lt;script&gt;alert(1)&lt;/script&gt; &amp; &#39;q&#39;");
    }

    @Test
    void call_redisServerNotExecutable_saysWhatToDoAndStillWritesTheReport(@TempDir Path dir) throws Exception {
        Path report = dir.resolve("bench.html");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        String before = System.getProperty("dlock.test.redisServer");
        int status;
        try {
            status = new CommandLine(new BenchCommand())
                    .setOut(new PrintWriter(out))
                    .setErr(new PrintWriter(err))
                    .execute(
                            "--quick",
                            "--backends",
                            "redis",
                            "--workloads",
                            "W1",
                            "--redis-server",
                            dir.resolve("no-such-redis-server").toString(),
                            "--report",
                            report.toString());
        } finally {
            if (before == null) {
                System.clearProperty("dlock.test.redisServer");
            } else {
                System.setProperty("dlock.test.redisServer", before);
            }
        }

        assertThat(status).isEqualTo(1);
        assertThat(err.toString())
                .contains("is not an executable file")
                .contains("what to do: give --redis-server the path of a redis-server binary")
                .contains("sudo apt-get install redis-server");
        assertThat(out.toString()).contains("report: " + report.toAbsolutePath());
        assertThat(Files.readString(report)).contains("The run failed: java.lang.IllegalStateException");
    }
}
