package io.dlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.testkit.HeadlessChromium;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * The HTML reports of a short {@code dlock torture} and a short {@code dlock demo}, loaded in
 * headless Chromium (Debian's {@code chromium}; a missing browser fails the test naming the
 * package): the browser's DOM holds one timeline lane per worker, the bars stand for exactly the
 * critical sections the command counted, and a screenshot shows the bars' colours.
 */
class ReportsIT {

    private static final Pattern SVG = Pattern.compile("<svg class=\"timeline\"[^>]*>(.*?)</svg>", Pattern.DOTALL);
    private static final Pattern LANE = Pattern.compile(
            "<g class=\"lane\" data-lane=\"([^\"]*)\" data-sections=\"(\\d+)\">(.*?)</g>", Pattern.DOTALL);
    private static final Pattern BAR = Pattern.compile("<rect class=\"bar ([a-z-]+)\" data-n=\"(\\d+)\"");

    /** A lane as the browser has it: its name, the sections it claims and the bars drawn. */
    private record Lane(String name, int sections, int bars, int drawnSections, List<String> outcomes) {}

    private static List<List<Lane>> timelines(String dom) {
        List<List<Lane>> timelines = new ArrayList<>();
        Matcher svg = SVG.matcher(dom);
        while (svg.find()) {
            List<Lane> lanes = new ArrayList<>();
            Matcher lane = LANE.matcher(svg.group(1));
            while (lane.find()) {
                Matcher bar = BAR.matcher(lane.group(3));
                int bars = 0;
                int drawn = 0;
                List<String> outcomes = new ArrayList<>();
                while (bar.find()) {
                    bars++;
                    drawn += Integer.parseInt(bar.group(2));
                    outcomes.add(bar.group(1));
                }
                lanes.add(new Lane(lane.group(1), Integer.parseInt(lane.group(2)), bars, drawn, outcomes));
            }
            timelines.add(lanes);
        }
        return timelines;
    }

    private static int count(String text, String needle) {
        int n = 0;
        for (int i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) {
            n++;
        }
        return n;
    }

    /** Pixels of the screenshot within a few steps of {@code rgb}. */
    private static int pixels(Path png, int rgb) throws IOException {
        BufferedImage image = ImageIO.read(png.toFile());
        int n = 0;
        for (int y = 0; y < image.getHeight(); y++) {
            for (int x = 0; x < image.getWidth(); x++) {
                int p = image.getRGB(x, y);
                if (Math.abs(((p >> 16) & 0xff) - ((rgb >> 16) & 0xff)) < 8
                        && Math.abs(((p >> 8) & 0xff) - ((rgb >> 8) & 0xff)) < 8
                        && Math.abs((p & 0xff) - (rgb & 0xff)) < 8) {
                    n++;
                }
            }
        }
        return n;
    }

    @Test
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void torture_shortRunWithAKill_reportRendersALanePerWorkerAndEverySection(@TempDir Path dir) throws IOException {
        Path report = dir.resolve("torture.html");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine commandLine = Main.commandLine();
        commandLine.setOut(new PrintWriter(out, true));
        commandLine.setErr(new PrintWriter(err, true));

        // One kill fits in 14 s: the killed worker is replaced, so three workers took part.
        int status = commandLine.execute(
                "torture",
                "--uri",
                "embedded",
                "--workers",
                "2",
                "--duration",
                "14s",
                "--faults",
                "kill",
                "--session-timeout",
                "1s",
                "--seed",
                "3",
                "--report",
                report.toString());

        String output = out + "\n--- stderr ---\n" + err;
        assertThat(status).as(output).isZero();
        Matcher line = Pattern.compile(
                        "report: (\\S+) \\((\\d+) lanes, (\\d+) critical sections in (\\d+) bars, (\\d+) faults, (\\d+) lock losses\\)")
                .matcher(out.toString());
        assertThat(line.find()).as(output).isTrue();
        assertThat(Path.of(line.group(1))).isEqualTo(report.toAbsolutePath());
        int sections = Integer.parseInt(line.group(3));
        int bars = Integer.parseInt(line.group(4));
        assertThat(line.group(2)).as(output).isEqualTo("3");
        assertThat(line.group(5)).as(output).isEqualTo("1");
        assertThat(sections).as(output).isPositive();

        String dom = HeadlessChromium.dumpDom(report);
        List<List<Lane>> timelines = timelines(dom);
        assertThat(timelines).as(dom).hasSize(1);
        List<Lane> lanes = timelines.get(0);
        assertThat(lanes).extracting(Lane::name).containsExactly("w1", "w2", "w3");
        for (Lane lane : lanes) {
            assertThat(lane.drawnSections()).as(lane.name()).isEqualTo(lane.sections());
            // Fenced and passed: no section overlapped another.
            assertThat(lane.outcomes()).as(lane.name()).doesNotContain("overlap");
        }
        assertThat(lanes.stream().mapToInt(Lane::sections).sum()).isEqualTo(sections);
        assertThat(lanes.stream().mapToInt(Lane::bars).sum()).isEqualTo(bars);
        assertThat(count(dom, "<g class=\"fault\">")).isEqualTo(1);
        assertThat(dom)
                .contains("kill w")
                .containsPattern("recovered in \\d+\\.\\ds")
                .contains("PASS");

        Path png = HeadlessChromium.screenshot(report, dir.resolve("torture.png"), 1200, 700);
        assertThat(pixels(png, 0x43a047))
                .as("accepted-green pixels in the screenshot")
                .isGreaterThan(50);
    }

    @Test
    @Timeout(value = 3, unit = TimeUnit.MINUTES)
    void demo_defaults_reportRendersFourRoundsWithALanePerWorker(@TempDir Path dir) throws IOException {
        Path report = dir.resolve("demo.html");
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine commandLine = Main.commandLine();
        commandLine.setOut(new PrintWriter(out, true));
        commandLine.setErr(new PrintWriter(err, true));

        int status = commandLine.execute("demo", "--report", report.toString());

        String output = out + "\n--- stderr ---\n" + err;
        assertThat(status).as(output).isZero();
        Matcher line = Pattern.compile("report: (\\S+) \\(4 rounds, (\\d+) sales drawn as (\\d+) bars\\)")
                .matcher(out.toString());
        assertThat(line.find()).as(output).isTrue();
        assertThat(Files.exists(Path.of(line.group(1)))).isTrue();

        String dom = HeadlessChromium.dumpDom(report);
        List<List<Lane>> rounds = timelines(dom);
        assertThat(rounds).as(dom).hasSize(4);
        int sales = 0;
        int bars = 0;
        for (List<Lane> lanes : rounds) {
            assertThat(lanes).extracting(Lane::name).containsExactly("worker-1", "worker-2", "worker-3");
            for (Lane lane : lanes) {
                assertThat(lane.drawnSections()).as(lane.name()).isEqualTo(lane.sections());
                sales += lane.sections();
                bars += lane.bars();
            }
        }
        assertThat(sales).isEqualTo(Integer.parseInt(line.group(2)));
        assertThat(bars).isEqualTo(Integer.parseInt(line.group(3)));
        // Round 1 (no lock) lost updates: red bars; round 4's paused holder was refused: an orange one.
        assertThat(rounds.get(0).stream().flatMap(l -> l.outcomes().stream())).contains("overlap");
        assertThat(rounds.get(1).stream().flatMap(l -> l.outcomes().stream())).containsOnly("accepted");
        assertThat(rounds.get(3).stream().flatMap(l -> l.outcomes().stream())).contains("refused-stale");
        assertThat(count(dom, "<g class=\"fault\">")).isEqualTo(2); // the kill and the pause
        assertThat(dom).contains("kill -9 worker-1").contains("SIGSTOP worker-1");

        Path png = HeadlessChromium.screenshot(report, dir.resolve("demo.png"), 1200, 900);
        assertThat(pixels(png, 0xd32f2f)).as("overlap-red pixels of round 1").isGreaterThan(20);
    }
}
