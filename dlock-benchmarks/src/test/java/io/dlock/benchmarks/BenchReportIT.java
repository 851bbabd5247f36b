package io.dlock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.testkit.HeadlessChromium;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * A short {@code dlock bench} (W1 and COST on Redis: dlock, Redisson and the floor) writes an HTML
 * report that headless Chromium (Debian's {@code chromium}; missing, the test fails naming it)
 * renders with one bar per implementation per workload and a p50 and p99 bar each for latency.
 * With {@code --quiet} nothing but the results and the report's path is printed.
 */
class BenchReportIT {

    private static final Pattern SECTION = Pattern.compile(
            "<section class=\"workload\" data-workload=\"([A-Z0-9]+)\">(.*?)</section>", Pattern.DOTALL);

    private static List<String> bars(String html, String svgClass) {
        Matcher svg = Pattern.compile("<svg class=\"" + svgClass + "\"[^>]*>(.*?)</svg>", Pattern.DOTALL)
                .matcher(html);
        List<String> bars = new ArrayList<>();
        if (svg.find()) {
            Matcher bar = Pattern.compile("<rect class=\"bar ([a-z0-9]+)\"").matcher(svg.group(1));
            while (bar.find()) {
                bars.add(bar.group(1));
            }
        }
        return bars;
    }

    @Test
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void call_quickW1AndCostOnRedis_reportRendersABarPerImplementation(@TempDir Path dir) {
        Path report = dir.resolve("bench.html");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int status = new CommandLine(new BenchCommand())
                .setOut(new PrintWriter(out))
                .setErr(new PrintWriter(err))
                .execute(
                        "--quick",
                        "--quiet",
                        "--backends",
                        "redis",
                        "--impls",
                        "dlock-redis,redisson,redis-floor",
                        "--workloads",
                        "W1,COST",
                        "--report",
                        report.toString());

        String output = out + "\n--- stderr ---\n" + err;
        assertThat(status).as(output).isZero();
        assertThat(out.toString()).as(output).contains("report: " + report.toAbsolutePath() + " (6 results)");
        assertThat(err.toString()).as("--quiet").doesNotContain("progress:").doesNotContain("started ");

        String dom = HeadlessChromium.dumpDom(report);
        Matcher section = SECTION.matcher(dom);
        List<String> workloads = new ArrayList<>();
        while (section.find()) {
            workloads.add(section.group(1));
            assertThat(bars(section.group(2), "figures"))
                    .as(section.group(1))
                    .containsExactly("dlock", "anchor", "floor");
            if (section.group(1).equals("W1")) {
                assertThat(bars(section.group(2), "latency")).containsExactly("p50", "p99", "p50", "p99", "p50", "p99");
            } else {
                assertThat(bars(section.group(2), "latency")).isEmpty();
            }
        }
        assertThat(workloads).containsExactly("W1", "COST");
        assertThat(dom).contains("dlock-redis").contains("redisson").contains("redis-floor");
    }
}
