package io.dlock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Smoke test of the side-by-side runner: {@code --quick} W3 on ZooKeeper (the runner starts the
 * server and four worker JVMs itself), and W5 and W6 (virtual threads, in a worker JVM of JDK 25) on
 * Redis. Asserts that the output is well-formed and that every
 * adapter completed hand-offs with no overlapping critical sections. No speed is asserted.
 */
class BenchCommandIT {

    private static final Pattern JSON_LINE = Pattern.compile(
            "^\\{\"workload\":\"(W3)\",\"backend\":\"zookeeper\",\"impl\":\"([a-z-]+)\",\"role\":\"[a-z]+\","
                    + "\"opsPerSec\":([0-9.]+),\"ops\":(\\d+),.*\"overlaps\":(\\d+),.*\\}$");

    /** What a run printed; {@link #bench} has checked that it exited with 0. */
    private record Run(String out, String err) {}

    private static Run bench(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int status = new CommandLine(new BenchCommand())
                .setOut(new PrintWriter(out))
                .setErr(new PrintWriter(err))
                .execute(args);
        assertThat(status).as("exit status; stderr:%n%s", err).isZero();
        return new Run(out.toString(), err.toString());
    }

    @Test
    void call_quickW3OnZooKeeper_everyAdapterHandsOffWithoutOverlap() {
        Run run = bench("--quick", "--backends", "zookeeper", "--workloads", "W3");
        String text = run.out();
        assertThat(text)
                .startsWith("dlock bench {\"date\":")
                .contains(Report.TITLES.get("W3"))
                .containsPattern("ratio dlock-zk: [0-9.]+x curator");
        // Every real lock on ZooKeeper takes part (dlock with and without local queueing, Curator);
        // the floors are not locks and sit out the contended workloads.
        List<String> expected = Arrays.stream(LockImpl.values())
                .filter(i -> i.backend() == Backend.ZOOKEEPER && i.inDefaultSet() && i.contendable())
                .map(LockImpl::label)
                .toList();
        assertThat(expected).contains("dlock-zk", "curator");
        List<String> jsonLines =
                text.lines().filter(l -> l.startsWith("{\"workload\"")).toList();
        List<String> seen = new ArrayList<>();
        for (String line : jsonLines) {
            Matcher m = JSON_LINE.matcher(line);
            assertThat(m.matches()).as("well-formed: %s", line).isTrue();
            seen.add(m.group(2));
            assertThat(Long.parseLong(m.group(4)))
                    .as("hand-offs of %s", m.group(2))
                    .isPositive();
            assertThat(Long.parseLong(m.group(5)))
                    .as("overlaps of %s", m.group(2))
                    .isZero();
        }
        assertThat(seen).containsExactlyElementsOf(expected);
    }

    @Test
    void call_quickW1OnZooKeeperWithCharts_writesZookeeperSvgThatFromJsonDrawsAgain(@TempDir Path dir)
            throws Exception {
        Path charts = dir.resolve("charts");
        Path saved = dir.resolve("run.jsonl");
        Run run = bench(
                "--quick",
                "--quiet",
                "--backends",
                "zookeeper",
                "--workloads",
                "W1",
                "--report",
                "none",
                "--json",
                saved.toString(),
                "--charts",
                charts.toString());

        Path svg = charts.resolve("zookeeper.svg");
        assertThat(run.out()).contains("charts: " + svg.toAbsolutePath());
        assertThat(Files.list(charts)).containsExactly(svg);
        String drawn = Files.readString(svg);
        org.w3c.dom.Document doc = ChartsTest.parse(drawn);
        org.w3c.dom.NodeList rects = doc.getElementsByTagNameNS("http://www.w3.org/2000/svg", "rect");
        List<String> bars = new ArrayList<>();
        for (int i = 0; i < rects.getLength(); i++) {
            org.w3c.dom.Element rect = (org.w3c.dom.Element) rects.item(i);
            if (rect.getAttribute("class").startsWith("bar ")) {
                assertThat(rect.getAttribute("data-workload")).isEqualTo("W1");
                assertThat(Double.parseDouble(rect.getAttribute("data-value"))).isPositive();
                bars.add(rect.getAttribute("data-impl"));
            }
        }
        assertThat(bars)
                .containsExactlyElementsOf(Arrays.stream(LockImpl.values())
                        .filter(i -> i.backend() == Backend.ZOOKEEPER && i.inDefaultSet())
                        .map(LockImpl::label)
                        .toList());
        assertThat(drawn).containsPattern("[0-9.]+× curator · [0-9.]+× zk-floor");

        Path again = dir.resolve("again");
        bench("--from-json", saved.toString(), "--charts", again.toString());
        assertThat(Files.readString(again.resolve("zookeeper.svg")))
                .as("drawn again from the saved run")
                .isEqualTo(drawn);
    }

    @Test
    void call_quickW5AndW6OnRedis_dlockRunsOverManyNamesAndOnVirtualThreadsWithoutOverlapOrPinning() {
        Run run = bench(
                "--quick",
                "--backends",
                "redis",
                "--impls",
                "dlock-redis,redis-floor",
                "--workloads",
                "W5,W6",
                "--w6-threads",
                "500",
                "--w6-locks",
                "20",
                "--report",
                "none");
        List<String> json =
                run.out().lines().filter(l -> l.startsWith("{\"workload\"")).toList();
        assertThat(json)
                .anySatisfy(l ->
                        assertThat(l).startsWith("{\"workload\":\"W5\",\"backend\":\"redis\",\"impl\":\"dlock-redis\""))
                .anySatisfy(l -> assertThat(l)
                        .startsWith("{\"workload\":\"W5\",\"backend\":\"redis\",\"impl\":\"redis-floor\""));
        String w6 = json.stream()
                .filter(l -> l.startsWith("{\"workload\":\"W6\""))
                .collect(java.util.stream.Collectors.joining("\n"));
        // The floor polls, it cannot queue: it sits out W6 as it does W2.
        assertThat(w6).contains("\"impl\":\"dlock-redis\"").doesNotContain("redis-floor");
        assertThat(w6).containsPattern("\"ops\":[1-9]\\d*,");
        assertThat(w6)
                .as("%s%n%s", run.out(), run.err())
                .contains("\"overlaps\":0,")
                .contains("\"pinnedByDlock\":0");
        assertThat(w6).containsPattern("\"heapPerWaitingThread\":[1-9]\\d*");
        for (String line : json) {
            assertThat(line).as("overlaps in %s", line).contains("\"overlaps\":0,");
        }
    }

    @Test
    void call_quickScaleOnRedis_oneResultPerCellAndImplementationWithoutOverlap() {
        Run run = bench(
                "--quick",
                "--backends",
                "redis",
                "--impls",
                "dlock-redis,redis-floor",
                "--workloads",
                "SCALE",
                "--scale-jvms",
                "2,1",
                "--scale-names",
                "1,50",
                "--report",
                "none");
        List<String> json =
                run.out().lines().filter(l -> l.startsWith("{\"workload\"")).toList();
        List<String> cells = new ArrayList<>();
        for (String line : json) {
            Matcher m = Pattern.compile(
                            "^\\{\"workload\":\"(SCALE j=\\d+ n=\\d+)\",\"backend\":\"redis\",\"impl\":\"([a-z-]+)\",.*"
                                    + "\"ops\":(\\d+),.*\"overlaps\":0,.*$")
                    .matcher(line);
            assertThat(m.matches()).as("well-formed, no overlap: %s", line).isTrue();
            assertThat(Long.parseLong(m.group(3))).as("cycles in %s", line).isPositive();
            cells.add(m.group(1) + " " + m.group(2));
        }
        // Cells in order of names, then JVMs. The floor polls, it cannot queue: it sits out the
        // cells of one name (W2's and W3's contention) and runs where names spread the load.
        assertThat(cells)
                .containsExactly(
                        "SCALE j=1 n=1 dlock-redis",
                        "SCALE j=2 n=1 dlock-redis",
                        "SCALE j=1 n=50 dlock-redis",
                        "SCALE j=1 n=50 redis-floor",
                        "SCALE j=2 n=50 dlock-redis",
                        "SCALE j=2 n=50 redis-floor");
    }

    @Test
    void call_quickCostOnRedis_reportsRedissOwnTimeInTheCommandsEachClientSent() {
        Run run = bench(
                "--quick",
                "--backends",
                "redis",
                "--impls",
                "dlock-redis,redis-fenced-floor",
                "--workloads",
                "COST",
                "--report",
                "none");
        Pattern cost = Pattern.compile(
                "^\\{\"workload\":\"COST\",\"backend\":\"redis\",\"impl\":\"([a-z-]+)\",.*"
                        + "\"requests\":\"([^\"]*)\",.*\"serverCommandUsPerCycle\":([0-9.]+),.*\"usecPerCall\":\"([^\"]*)\".*$");
        java.util.Map<String, Double> commandUs = new java.util.HashMap<>();
        for (String line :
                run.out().lines().filter(l -> l.startsWith("{\"workload\"")).toList()) {
            Matcher m = cost.matcher(line);
            assertThat(m.matches()).as("well-formed: %s", line).isTrue();
            assertThat(m.group(4)).as("time per call in %s", line).containsPattern("evalsha:[0-9.]+");
            commandUs.put(m.group(1), Double.parseDouble(m.group(3)));
            if (m.group(1).equals("redis-fenced-floor")) {
                assertThat(m.group(2)).contains("multi:1.00", "exec:1.00", "set:1.00", "time:1.00");
            }
        }
        // Both send one script a cycle at least, which alone costs Redis microseconds; the floor's
        // SET and TIME run inside EXEC and are counted once, in EXEC's time.
        assertThat(commandUs).containsOnlyKeys("dlock-redis", "redis-fenced-floor");
        assertThat(commandUs.values()).allSatisfy(us -> assertThat(us).isBetween(1.0, 1_000.0));
    }
}
