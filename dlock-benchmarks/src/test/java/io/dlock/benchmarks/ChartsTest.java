package io.dlock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.io.PrintWriter;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;
import org.xml.sax.InputSource;
import picocli.CommandLine;

/**
 * The per-backend charts and {@code --from-json}: results saved as {@code --json} writes them, read
 * back and drawn, give the same SVG as the run itself would, one panel per charted workload and one
 * bar per result, with the ratios {@link Report} computes; hostile strings stay text; a bad line
 * stops the rendering before anything is written.
 */
class ChartsTest {

    private static final String SVG = "http://www.w3.org/2000/svg";

    private static Result result(String workload, LockImpl impl, double primary, Map<String, Object> extra) {
        boolean cost = workload.equals("COST"); // measures no time and no latency
        return new Result(
                workload,
                impl,
                primary,
                1000,
                cost ? Double.NaN : 3.0,
                cost ? Double.NaN : 240.5,
                cost ? Double.NaN : 1200.25,
                0,
                new LinkedHashMap<>(extra));
    }

    private static Result rounds(String workload, LockImpl impl, List<Double> rounds) {
        double pooled =
                rounds.stream().mapToDouble(Double::doubleValue).average().orElseThrow();
        return result(workload, impl, pooled, Map.of(Report.OPS_ROUNDS, rounds));
    }

    /** A run of two backends: every charted workload on ZooKeeper, W1 on Redis with two anchors and two floors. */
    private static List<Result> results() {
        List<Result> out = new ArrayList<>();
        // Round by round dlock is 1.50x Curator (2.0 / 1.5 / 0.775); pooled it would be 1.16x.
        out.add(rounds("W1", LockImpl.DLOCK_ZK, List.of(2000.0, 3000.0, 3100.0)));
        out.add(rounds("W1", LockImpl.CURATOR, List.of(1000.0, 2000.0, 4000.0)));
        out.add(rounds("W1", LockImpl.ZK_FLOOR, List.of(2500.0, 2500.0, 2500.0)));
        out.add(rounds("W2", LockImpl.DLOCK_ZK, List.of(50000.0, 52000.0, 51000.0)));
        out.add(rounds("W2", LockImpl.DLOCK_ZK_NO_LOCAL_QUEUE, List.of(900.0, 950.0, 1000.0)));
        out.add(rounds("W2", LockImpl.CURATOR, List.of(500.0, 550.0, 600.0)));
        out.add(result("W4", LockImpl.DLOCK_ZK, 30000, Map.of("heapBytesPerLock", 471.0, "locks", 100000)));
        out.add(result("W4", LockImpl.CURATOR, 20000, Map.of("heapBytesPerLock", 878.0, "locks", 100000)));
        out.add(rounds("SCALE j=2 n=100", LockImpl.DLOCK_ZK, List.of(4000.0, 4100.0, 4200.0)));
        out.add(rounds("SCALE j=2 n=100", LockImpl.ZK_FLOOR, List.of(4400.0, 4400.0, 4400.0)));
        out.add(result(
                "COST",
                LockImpl.DLOCK_ZK,
                2.0,
                Map.of(
                        "counter",
                        "zk_packets_received",
                        "clientCpuUsPerCycle",
                        191.0,
                        Report.CLIENT_CPU_ROUNDS,
                        List.of(190.0, 191.0, 200.0))));
        out.add(result(
                "COST",
                LockImpl.CURATOR,
                3.0,
                Map.of("clientCpuUsPerCycle", 250.0, Report.CLIENT_CPU_ROUNDS, List.of(250.0, 250.0, 250.0))));
        out.add(result(
                "COST",
                LockImpl.ZK_FLOOR,
                2.0,
                Map.of("clientCpuUsPerCycle", 173.0, Report.CLIENT_CPU_ROUNDS, List.of(173.0, 173.0, 173.0))));
        out.add(rounds("W1", LockImpl.DLOCK_REDIS, List.of(4500.0, 4600.0, 4550.0)));
        out.add(rounds("W1", LockImpl.REDISSON, List.of(2600.0, 2700.0, 2650.0)));
        out.add(rounds("W1", LockImpl.SPRING_REDIS, List.of(5400.0, 5500.0, 5450.0)));
        out.add(rounds("W1", LockImpl.REDIS_FLOOR, List.of(5000.0, 5100.0, 5200.0)));
        out.add(rounds("W1", LockImpl.REDIS_FENCED_FLOOR, List.of(4400.0, 4500.0, 4450.0)));
        return out;
    }

    private static Map<String, Object> header() {
        Map<String, Object> h = new LinkedHashMap<>();
        h.put("date", "2026-11-29T14:23:05.123Z");
        h.put("cpus", 2);
        h.put("cpu", "AMD EPYC 7B13");
        h.put("memoryGiB", 23);
        h.put("os", "Linux 6.1");
        h.put("java", "OpenJDK 64-Bit Server VM 17.0.15+6");
        h.put("duration", "PT4S");
        h.put("rounds", 3);
        h.put("w2Threads", 8);
        h.put(
                "args",
                List.of(
                        "--backends",
                        "zookeeper,redis",
                        "--impls",
                        "dlock-zk,dlock-zk-nolq,curator,zk-floor,dlock-redis,redisson,spring-redis,redis-floor,"
                                + "redis-fenced-floor",
                        "--rounds",
                        "3"));
        return h;
    }

    static Document parse(String svg) throws Exception {
        DocumentBuilderFactory f = DocumentBuilderFactory.newInstance();
        f.setNamespaceAware(true);
        f.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
        f.setFeature("http://xml.org/sax/features/external-general-entities", false);
        f.setFeature("http://xml.org/sax/features/external-parameter-entities", false);
        f.setXIncludeAware(false);
        f.setExpandEntityReferences(false);
        return f.newDocumentBuilder().parse(new InputSource(new StringReader(svg)));
    }

    private static List<Element> elements(Document doc, String tag, String cssClass) {
        List<Element> out = new ArrayList<>();
        NodeList all = doc.getElementsByTagNameNS(SVG, tag);
        for (int i = 0; i < all.getLength(); i++) {
            Element e = (Element) all.item(i);
            if (cssClass.isEmpty()
                    || List.of(e.getAttribute("class").split(" ")).contains(cssClass)) {
                out.add(e);
            }
        }
        return out;
    }

    /** The text of every {@code <text>} of a class (or all), wrapped lines joined by a space again. */
    private static String text(Document doc, String cssClass) {
        return String.join(
                " ",
                elements(doc, "text", cssClass).stream()
                        .map(Element::getTextContent)
                        .toList());
    }

    /** The ratio lines under one implementation's bar in a panel, joined by "; ". */
    private static String ratios(Element panel, String impl) {
        List<String> lines = new ArrayList<>();
        NodeList all = panel.getElementsByTagNameNS(SVG, "text");
        for (int i = 0; i < all.getLength(); i++) {
            Element e = (Element) all.item(i);
            if (e.getAttribute("class").equals("ratios")
                    && e.getAttribute("data-impl").equals(impl)) {
                lines.add(e.getTextContent());
            }
        }
        return String.join("; ", lines);
    }

    private static Element child(Element parent, String cssClass, String impl) {
        NodeList all = parent.getElementsByTagNameNS(SVG, "*");
        for (int i = 0; i < all.getLength(); i++) {
            Element e = (Element) all.item(i);
            if (List.of(e.getAttribute("class").split(" ")).contains(cssClass)
                    && e.getAttribute("data-impl").equals(impl)) {
                return e;
            }
        }
        throw new AssertionError("no ." + cssClass + " of " + impl);
    }

    private record Run(int status, String out, String err) {}

    private static Run bench(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int status = new CommandLine(new BenchCommand())
                .setOut(new PrintWriter(out))
                .setErr(new PrintWriter(err))
                .execute(args);
        return new Run(status, out.toString(), err.toString());
    }

    @Test
    void fromJson_savedRun_drawsTheChartsTheRunWouldHaveDrawn(@TempDir Path dir) throws Exception {
        List<Result> results = results();
        Map<String, Object> header = header();
        Path saved = dir.resolve("run.jsonl");
        new RunFile(header, results, "").write(saved);
        Path charts = dir.resolve("charts");

        Run run = bench("--from-json", saved.toString(), "--charts", charts.toString());

        assertThat(run.status()).as(run.err()).isZero();
        StringWriter table = new StringWriter();
        Report.table(new PrintWriter(table), results);
        assertThat(run.out())
                .as("the table of the saved run")
                .contains(table.toString().trim());
        assertThat(run.out()).contains("charts: " + charts.toAbsolutePath().resolve("zookeeper.svg"));
        assertThat(charts.resolve("zookeeper.svg")).exists();
        assertThat(charts.resolve("redis.svg")).exists();
        assertThat(Files.list(charts)).hasSize(2);
        assertThat(dir.resolve("dlock-bench.html"))
                .as("the report only where --report asks for it")
                .doesNotExist();
        Map<Backend, String> direct = Charts.svgs(header, results, "");
        assertThat(Files.readString(charts.resolve("zookeeper.svg"), StandardCharsets.UTF_8))
                .as("re-rendered from the file, the chart the run drew itself")
                .isEqualTo(direct.get(Backend.ZOOKEEPER));
        assertThat(Files.readString(charts.resolve("redis.svg"), StandardCharsets.UTF_8))
                .isEqualTo(direct.get(Backend.REDIS));

        Path report = dir.resolve("report.html");
        Run page = bench("--from-json", saved.toString(), "--report", report.toString());
        assertThat(page.status()).as(page.err()).isZero();
        assertThat(Files.readString(report, StandardCharsets.UTF_8))
                .as("the HTML report of the saved run")
                .isEqualTo(HtmlReport.page(
                        RunFile.read(saved).header(), RunFile.read(saved).results(), ""))
                .contains("<section class=\"workload\" data-workload=\"W4\"");
    }

    @Test
    void svg_zooKeeper_onePanelPerChartedWorkloadAndOneBarPerResult() throws Exception {
        List<Result> results = results();
        Document doc = parse(Charts.svg(Backend.ZOOKEEPER, header(), results, ""));

        Element root = doc.getDocumentElement();
        assertThat(root.getNamespaceURI()).isEqualTo(SVG);
        assertThat(root.getLocalName()).isEqualTo("svg");
        assertThat(root.getAttribute("version")).isEqualTo("1.1");
        assertThat(Integer.parseInt(root.getAttribute("width"))).isLessThanOrEqualTo(900);
        assertThat(root.getAttribute("style")).contains("font-family:sans-serif");
        assertThat(elements(doc, "text", "title").get(0).getTextContent()).isEqualTo("dlock bench: ZooKeeper");
        assertThat(elements(doc, "text", "subtitle").get(0).getTextContent())
                .startsWith("2026-11-29 14:23 UTC · 3 interleaved rounds of 4s · 2 CPUs (AMD EPYC 7B13), 23 GiB");
        List<Element> panels = elements(doc, "g", "panel");
        assertThat(panels.stream().map(p -> p.getAttribute("data-workload")))
                .as("W4 is memory, a table's figure; Redis's W1 is in redis.svg")
                .containsExactly("W1", "W2", "SCALE j=2 n=100", "COST");
        for (Element panel : panels) {
            String w = panel.getAttribute("data-workload");
            List<Result> expected = results.stream()
                    .filter(r -> r.workload().equals(w) && r.impl().backend() == Backend.ZOOKEEPER)
                    .toList();
            NodeList rects = panel.getElementsByTagNameNS(SVG, "rect");
            List<String> impls = new ArrayList<>();
            for (int i = 0; i < rects.getLength(); i++) {
                Element bar = (Element) rects.item(i);
                Result r = expected.get(i);
                impls.add(bar.getAttribute("data-impl"));
                assertThat(bar.getAttribute("class"))
                        .isEqualTo("bar " + SvgBars.role(r.impl().role()));
                assertThat(bar.getAttribute("data-workload")).isEqualTo(w);
                assertThat(bar.getAttribute("data-role"))
                        .isEqualTo(SvgBars.role(r.impl().role()));
                assertThat(Double.parseDouble(bar.getAttribute("data-value"))).isCloseTo(r.primary(), within(1e-3));
                assertThat(bar.getAttribute("fill"))
                        .isEqualTo(SvgBars.colour(r.impl().role()));
            }
            assertThat(impls)
                    .containsExactlyElementsOf(
                            expected.stream().map(r -> r.impl().label()).toList());
            assertThat(panel.getAttribute("data-bars")).isEqualTo(Integer.toString(expected.size()));
        }
        Element w1 = panels.get(0);
        assertThat(child(w1, "figure", "dlock-zk").getTextContent()).isEqualTo("2,700");
        assertThat(ratios(w1, "dlock-zk")).isEqualTo("1.50× curator · 1.20× zk-floor");
        assertThat(child(panels.get(3), "figure", "dlock-zk").getTextContent()).isEqualTo("2.00 · client CPU 191 µs");
        assertThat(ratios(panels.get(3), "dlock-zk"))
                .isEqualTo("requests 0.67× curator · 1.00× zk-floor; client CPU 0.76× curator · 1.10× zk-floor");
        assertThat(text(doc, "command"))
                .startsWith("./dlock bench --backends zookeeper,redis --impls dlock-zk,")
                .endsWith("redis-fenced-floor --rounds 3");
        assertThat(doc.getElementsByTagNameNS(SVG, "script").getLength()).isZero();
        assertThat(Charts.svg(Backend.ZOOKEEPER, header(), results, ""))
                .doesNotContain("href")
                .doesNotContain("url(")
                .doesNotContain("@import");
    }

    @Test
    void svg_ratiosOfEveryDlockBar_areTheOnesReportPrints() throws Exception {
        List<Result> results = results();
        StringWriter table = new StringWriter();
        Report.table(new PrintWriter(table), results);
        for (Backend backend : List.of(Backend.ZOOKEEPER, Backend.REDIS)) {
            Document doc = parse(Charts.svg(backend, header(), results, ""));
            for (Element panel : elements(doc, "g", "panel")) {
                String w = panel.getAttribute("data-workload");
                for (Result r : results) {
                    if (!r.workload().equals(w)
                            || r.impl().backend() != backend
                            || r.impl().role() != LockImpl.Role.DLOCK) {
                        continue;
                    }
                    String line = ratios(panel, r.impl().label());
                    Map<String, Double> ratios = Report.ratios(r, results);
                    assertThat(ratios).isNotEmpty();
                    for (Map.Entry<String, Double> e : ratios.entrySet()) {
                        LockImpl other = LockImpl.parse(e.getKey());
                        String printed = String.format(Locale.ROOT, "%.2fx %s", e.getValue(), e.getKey());
                        assertThat(table.toString()).contains(printed);
                        boolean drawn = other.role() == LockImpl.Role.FLOOR || bestAnchor(r, results) == other;
                        if (drawn) {
                            assertThat(line).contains(Charts.ratio(e.getValue()) + " " + e.getKey());
                            assertThat(printed)
                                    .startsWith(Charts.ratio(e.getValue()).replace('×', 'x'));
                        } else {
                            assertThat(line).doesNotContain(" " + e.getKey());
                        }
                    }
                }
            }
        }
        Document redis = parse(Charts.svg(Backend.REDIS, header(), results, ""));
        assertThat(ratios(elements(redis, "g", "panel").get(0), "dlock-redis"))
                .as("Spring's registry is the faster anchor here; both floors follow")
                .isEqualTo("0.83× spring-redis (best anchor) · 0.90× redis-floor · 1.02× redis-fenced-floor");
    }

    private static LockImpl bestAnchor(Result r, List<Result> all) {
        return all.stream()
                .filter(o -> o.workload().equals(r.workload())
                        && o.impl().backend() == r.impl().backend()
                        && o.impl().role() == LockImpl.Role.ANCHOR)
                .max((a, b) -> r.higherIsBetter()
                        ? Double.compare(a.primary(), b.primary())
                        : Double.compare(b.primary(), a.primary()))
                .orElseThrow()
                .impl();
    }

    @Test
    void svg_costWithEveryRedisAnchorAndFloor_everyLineFitsTheWidth() throws Exception {
        List<Result> results = new ArrayList<>();
        for (LockImpl impl : List.of(
                LockImpl.DLOCK_REDIS,
                LockImpl.DLOCK_REDIS_NO_LOCAL_QUEUE,
                LockImpl.REDISSON,
                LockImpl.REDISSON_FAIR,
                LockImpl.SPRING_REDIS,
                LockImpl.REDIS_FLOOR,
                LockImpl.REDIS_FENCED_FLOOR)) {
            results.add(result(
                    "COST",
                    impl,
                    2.0 + impl.ordinal() % 3,
                    Map.of(
                            "clientCpuUsPerCycle",
                            141.0,
                            Report.CLIENT_CPU_ROUNDS,
                            List.of(141.0 + impl.ordinal(), 150.0, 160.0))));
        }

        Document doc = parse(Charts.svg(Backend.REDIS, header(), results, ""));

        Element panel = elements(doc, "g", "panel").get(0);
        assertThat(ratios(panel, "dlock-redis"))
                .startsWith("requests ")
                .contains("; client CPU ")
                .contains("(best anchor)")
                .contains("redis-floor")
                .contains("redis-fenced-floor");
        for (Element text : elements(doc, "text", "")) {
            double size = text.hasAttribute("font-size") ? Double.parseDouble(text.getAttribute("font-size")) : 12;
            // About 0.55 em a character in sans-serif; the bold title is short.
            double end = Double.parseDouble(text.getAttribute("x"))
                    + 0.55 * size * text.getTextContent().length();
            assertThat(end).as(text.getTextContent()).isLessThanOrEqualTo(Charts.WIDTH);
        }
    }

    @Test
    void svg_hostileStrings_stayText() throws Exception {
        String hostile = "</text><script>alert(1)</script> & 'q' \"x\" ]]> \u0001\uD800";
        Map<String, Object> header = header();
        header.put("cpu", hostile);
        header.put("args", List.of("--report", hostile));
        String workload = "W1<g onload=\"alert(1)\">";
        List<Result> results = List.of(
                rounds(workload, LockImpl.DLOCK_ZK, List.of(1.0, 2.0)),
                rounds(workload, LockImpl.CURATOR, List.of(1.0, 1.0)));

        String svg = Charts.svg(Backend.ZOOKEEPER, header, results, hostile);
        Document doc = parse(svg);

        assertThat(doc.getElementsByTagNameNS(SVG, "script").getLength()).isZero();
        assertThat(elements(doc, "g", "panel")).hasSize(1);
        assertThat(elements(doc, "g", "panel").get(0).getAttribute("data-workload"))
                .isEqualTo(workload);
        assertThat(elements(doc, "g", "").stream().filter(g -> g.hasAttribute("onload")))
                .isEmpty();
        assertThat(text(doc, ""))
                .contains("</text><script>alert(1)</script> & 'q' \"x\" ]]> \uFFFD\uFFFD")
                .contains("The run failed: </text><script>");
        assertThat(text(doc, "command")).contains("--report '</text><script>alert(1)</script> & '\\''q'\\''");
    }

    @Test
    void fromJson_malformedLine_failsNamingTheLineAndWritesNothing(@TempDir Path dir) throws Exception {
        List<Result> results = results();
        List<String> lines = new ArrayList<>(new RunFile(header(), results, "").lines());
        lines.set(3, lines.get(3).substring(0, 40));
        Path saved = dir.resolve("run.jsonl");
        Files.write(saved, lines, StandardCharsets.UTF_8);
        Path charts = dir.resolve("charts");
        Path report = dir.resolve("report.html");

        Run run = bench("--from-json", saved.toString(), "--charts", charts.toString(), "--report", report.toString());

        assertThat(run.status()).isEqualTo(2);
        assertThat(run.err())
                .contains("dlock bench: " + saved + ":4: ")
                .contains("at column 41, found the end of the line")
                .contains("nothing written");
        assertThat(run.out()).isEmpty();
        assertThat(charts).doesNotExist();
        assertThat(report).doesNotExist();
    }

    @Test
    void fromJson_unknownImplementationOrNoHeader_failsNamingTheLine(@TempDir Path dir) throws Exception {
        Path saved = dir.resolve("run.jsonl");
        List<String> lines = new ArrayList<>(new RunFile(header(), results(), "").lines());
        lines.set(2, lines.get(2).replace("\"impl\":\"curator\"", "\"impl\":\"no-such-lock\""));
        Files.write(saved, lines, StandardCharsets.UTF_8);

        assertThat(bench("--from-json", saved.toString()).err())
                .contains(saved + ":3: unknown implementation 'no-such-lock'");

        Files.write(saved, lines.subList(1, 3), StandardCharsets.UTF_8);
        assertThat(bench("--from-json", saved.toString()).err())
                .contains(saved + ":1: the first line must be the run's header");
    }

    @Test
    void fromJson_chartsDirectoryUnwritable_exits1SayingSo(@TempDir Path dir) throws Exception {
        Path saved = dir.resolve("run.jsonl");
        new RunFile(header(), results(), "").write(saved);
        Path file = Files.writeString(dir.resolve("a-file"), "");

        Run run = bench(
                "--from-json",
                saved.toString(),
                "--charts",
                file.resolve("charts").toString());

        assertThat(run.status()).isEqualTo(1);
        assertThat(run.out()).contains("dlock bench: no charts: cannot write the charts to " + file.resolve("charts"));
    }

    @Test
    void fromJson_withAnOptionThatShapesARun_exits2NamingIt(@TempDir Path dir) {
        Run run = bench("--from-json", dir.resolve("run.jsonl").toString(), "--rounds", "5");

        assertThat(run.status()).isEqualTo(2);
        assertThat(run.err()).contains("--rounds does not go with it");
    }

    @Test
    void call_runThatCannotStart_savesItsArgumentsAndWhyForFromJson(@TempDir Path dir) {
        Path saved = dir.resolve("run.jsonl");
        List<String> args = List.of(
                "--quick",
                "--backends",
                "redis",
                "--workloads",
                "W1",
                "--redis-server",
                dir.resolve("no-such-redis-server").toString(),
                "--report",
                "none",
                "--json",
                saved.toString(),
                "--charts",
                dir.resolve("charts").toString());
        String before = System.getProperty("dlock.test.redisServer");
        Run run;
        try {
            run = bench(args.toArray(String[]::new));
        } finally {
            if (before == null) {
                System.clearProperty("dlock.test.redisServer");
            } else {
                System.setProperty("dlock.test.redisServer", before);
            }
        }

        assertThat(run.status()).isEqualTo(1);
        assertThat(run.out()).contains("charts: none (no charted results)");
        RunFile read = RunFile.read(saved);
        assertThat(read.header().get("args")).isEqualTo(args);
        assertThat(read.header()).containsKeys("date", "cpus", "cpu", "memoryGiB", "os", "java", "rounds");
        assertThat(read.failure()).startsWith("java.lang.IllegalStateException");
        assertThat(read.results()).isEmpty();
    }

    @Test
    void read_savedRun_keepsEveryFigureRoleAndRound(@TempDir Path dir) {
        List<Result> results = results();
        Path saved = dir.resolve("run.jsonl");
        new RunFile(header(), results, "boom").write(saved);

        RunFile read = RunFile.read(saved);

        assertThat(read.failure()).isEqualTo("boom");
        assertThat(read.header()).containsEntry("rounds", 3L).containsEntry("args", header().get("args"));
        assertThat(read.results()).hasSameSizeAs(results);
        for (int i = 0; i < results.size(); i++) {
            Result a = results.get(i);
            Result b = read.results().get(i);
            assertThat(b.workload()).isEqualTo(a.workload());
            assertThat(b.impl()).isEqualTo(a.impl());
            assertThat(b.primary()).isCloseTo(a.primary(), within(1e-3));
            assertThat(b.ops()).isEqualTo(a.ops());
            assertThat(b.p50us()).isCloseTo(a.p50us(), within(1e-3));
            assertThat(b.overlaps()).isEqualTo(a.overlaps());
            assertThat(b.extra().keySet()).containsExactlyElementsOf(a.extra().keySet());
            assertThat(Report.ratios(b, read.results())).isEqualTo(Report.ratios(a, results));
        }
        Result cost = read.results().stream()
                .filter(r -> r.workload().equals("COST"))
                .findFirst()
                .orElseThrow();
        assertThat(cost.seconds()).as("NaN, written as null").isNaN();
    }
}
