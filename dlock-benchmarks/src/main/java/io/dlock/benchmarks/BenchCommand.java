package io.dlock.benchmarks;

import io.dlock.spi.BackendUri;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code dlock bench}: starts ZooKeeper (in its own JVM) and {@code redis-server}, then runs dlock,
 * Apache Curator's {@code InterProcessMutex}, Redisson's {@code RLock} and {@code RFairLock} and
 * the bare protocol of each server on those servers in one run, interleaved, and prints a table
 * with dlock's ratios to each and one JSON line per result.
 *
 * <p>Workloads: W1 uncontended cycles (1 thread); W2 {@code --w2-threads} threads of one JVM on one
 * lock; W3 {@code --w3-jvms} JVMs of {@code --w3-threads} threads on one lock; W4 {@code
 * --w4-locks} distinct locks held at once by one client, with client heap per held lock; W5 {@code
 * --w5-threads} threads over {@code --w5-names} lock names chosen at random; W6 {@code
 * --w6-threads} virtual threads over {@code --w6-locks} locks in a worker JVM of JDK 21+ ({@code
 * --jdk21}), with pinned-thread events and heap per waiting virtual thread; COST the server's
 * requests per uncontended cycle; SCALE (only when asked for) each of {@code --scale-jvms} worker
 * JVMs × each of {@code --scale-names} lock names, {@code --scale-threads} threads per JVM. Every
 * contended workload also checks mutual exclusion (overlapping critical sections are counted and
 * must be 0).
 *
 * <p>Output: the table and one JSON line per result on standard output, and the HTML report ({@code
 * --report}). {@code --json FILE} saves the run (a header with the date, the machine, the sizes and
 * this command's arguments, then every result with its role and per-round figures: {@link
 * RunFile}); {@code --charts DIR} writes one SVG per backend ({@link Charts}). {@code --from-json
 * FILE} runs nothing: it reads a saved run whole, then prints its table and writes the report and
 * charts asked for, so that charts can be drawn again without running the benchmark.
 *
 * <p>Run it alone with {@code java -cp dlock-benchmarks/target/benchmarks.jar
 * io.dlock.benchmarks.BenchCommand [options]}. Exit status: 0 when every workload ran and no
 * overlap was seen; 1 when a workload failed or an overlap was seen (with {@code --from-json}: when
 * the report or charts could not be written); 2 for bad options or a saved run that cannot be read.
 *
 * <p>Thread-safety: a command object holds parsed options; one instance per invocation.
 */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Runs dlock side by side with Apache Curator (InterProcessMutex), Redisson (RLock, RFairLock) and the"
                    + " bare protocol of each server, on servers it starts itself, interleaved, and prints ratios.",
            "Defaults take about 5 minutes; --quick about 1."
        },
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
            "0:every workload ran and mutual exclusion held",
            "1:a workload failed, or overlapping critical sections were seen; with --from-json, the report or"
                    + " charts could not be written",
            "2:invalid options, or a --from-json file that cannot be read (nothing is written)"
        })
public final class BenchCommand implements Callable<Integer> {

    /** Every workload, in the order they run. */
    public static final List<String> WORKLOADS = List.of("W1", "W2", "W3", "W4", "W5", "W6", "COST", "SCALE");

    /** What runs unless {@code --workloads} says otherwise: all but SCALE, which takes far longer. */
    static final List<String> DEFAULT_WORKLOADS = WORKLOADS.subList(0, WORKLOADS.size() - 1);

    /** SCALE's most worker JVMs: each opens a client per implementation; 2 cores drown long before. */
    static final int MAX_SCALE_JVMS = 32;

    /** Where W6 looks for a JDK 21+ unless told: the build machines' JDK 25. */
    static final String DEFAULT_JDK21 = "/usr/lib/jvm/temurin-25-jdk-amd64";

    @Spec
    private CommandSpec spec;

    @Option(
            names = "--workloads",
            split = ",",
            paramLabel = "W",
            description = "Workloads to run, of W1, W2, W3, W4, W5, W6, COST, SCALE (default: all but SCALE).")
    private List<String> workloads = new ArrayList<>(DEFAULT_WORKLOADS);

    @Option(
            names = "--backends",
            split = ",",
            paramLabel = "B",
            description = "Servers to run on, of zookeeper, redis, memcached, postgresql, mariadb, etcd (default:"
                    + " zookeeper and redis).")
    private List<String> backends = new ArrayList<>(List.of("zookeeper", "redis"));

    @Option(
            names = "--impls",
            split = ",",
            paramLabel = "I",
            description = "Implementations, of dlock-zk, dlock-zk-nolq (JVM-local queueing off), curator, zk-floor,"
                    + " dlock-redis, dlock-redis-nolq, redisson, redisson-fair, spring-redis, redis-floor, dlock-memcached,"
                    + " dlock-memcached-nolq, memcached-floor, dlock-pg, spring-jdbc-pg, shedlock-pg, sql-floor-pg,"
                    + " dlock-mariadb, spring-jdbc-mariadb, shedlock-mariadb, sql-floor-mariadb, dlock-etcd, jetcd-lock, jetcd-lock-lease, etcd-floor; and the diagnostic"
                    + " zk-floor-async, zk-protocol, zk-multi, redis-fenced-floor, dlock-redis-metrics (metrics on) (default: every"
                    + " one on the chosen servers but the"
                    + " diagnostic ones).")
    private List<String> impls = new ArrayList<>();

    @Option(
            names = "--warmup",
            paramLabel = "D",
            converter = DurationConverter.class,
            defaultValue = "3s",
            description = "Warm-up of each implementation per workload, run in two interleaved passes of half"
                    + " each (default: ${DEFAULT-VALUE}).")
    private Duration warmup;

    @Option(
            names = "--warmup-of",
            paramLabel = "WORKLOAD=D",
            description = "A workload's own warm-up, in place of --warmup (repeatable). On 2 cores W1's"
                    + " loop and dlock's engine are compiled by C2 only 25-37 s into a run, so W1=45s"
                    + " COST=45s measure the compiled cycle without making every workload wait as long.")
    private Map<String, String> warmupOf = new LinkedHashMap<>();

    @Option(
            names = "--duration",
            paramLabel = "D",
            converter = DurationConverter.class,
            defaultValue = "3s",
            description = "One measured period (default: ${DEFAULT-VALUE}).")
    private Duration duration;

    @Option(
            names = "--rounds",
            paramLabel = "N",
            defaultValue = "3",
            description =
                    "Measured periods per implementation, interleaved A, B, C, A, B, C (default: ${DEFAULT-VALUE}).")
    private int rounds;

    @Option(
            names = "--w2-threads",
            paramLabel = "N",
            defaultValue = "8",
            description = "W2 threads (default: ${DEFAULT-VALUE}).")
    private int w2Threads;

    @Option(
            names = "--w3-jvms",
            paramLabel = "N",
            defaultValue = "4",
            description = "W3 worker JVMs (default: ${DEFAULT-VALUE}).")
    private int w3Jvms;

    @Option(
            names = "--w3-threads",
            paramLabel = "N",
            defaultValue = "2",
            description = "W3 threads per worker JVM (default: ${DEFAULT-VALUE}).")
    private int w3Threads;

    @Option(
            names = "--w4-locks",
            paramLabel = "N",
            defaultValue = "100000",
            description = "W4 locks held at once (default: ${DEFAULT-VALUE}).")
    private int w4Locks;

    @Option(
            names = "--w4-threads",
            paramLabel = "N",
            defaultValue = "8",
            description = "W4 threads that acquire and release the locks (default: ${DEFAULT-VALUE}).")
    private int w4Threads;

    @Option(
            names = "--w5-threads",
            paramLabel = "N",
            defaultValue = "64",
            description = "W5 threads (default: ${DEFAULT-VALUE}).")
    private int w5Threads;

    @Option(
            names = "--w5-names",
            paramLabel = "N",
            defaultValue = "10000",
            description = "W5 lock names, one chosen at random per cycle (default: ${DEFAULT-VALUE}).")
    private int w5Names;

    @Option(
            names = "--w6-threads",
            paramLabel = "N",
            defaultValue = "10000",
            description = "W6 virtual threads (default: ${DEFAULT-VALUE}).")
    private int w6Threads;

    @Option(
            names = "--w6-locks",
            paramLabel = "N",
            defaultValue = "100",
            description = "W6 locks, one chosen at random per cycle (default: ${DEFAULT-VALUE}).")
    private int w6Locks;

    @Option(
            names = "--jdk21",
            paramLabel = "DIR",
            description =
                    "A JDK 21 or newer for W6's virtual threads (default: $DLOCK_JDK21, else " + DEFAULT_JDK21 + ").")
    private Path jdk21;

    @Option(
            names = "--scale-jvms",
            split = ",",
            paramLabel = "N",
            defaultValue = "1,2,4,8",
            description = "SCALE's counts of worker JVMs, one cell each (default: ${DEFAULT-VALUE}).")
    private List<Integer> scaleJvms;

    @Option(
            names = "--scale-names",
            split = ",",
            paramLabel = "N",
            defaultValue = "1,100,10000",
            description = "SCALE's counts of lock names, one cell each (default: ${DEFAULT-VALUE}).")
    private List<Integer> scaleNames;

    @Option(
            names = "--scale-threads",
            paramLabel = "N",
            defaultValue = "2",
            description = "SCALE's threads per worker JVM (default: ${DEFAULT-VALUE}).")
    private int scaleThreads;

    @Option(
            names = "--cost-cycles",
            paramLabel = "N",
            defaultValue = "5000",
            description = "Cycles counted for COST (default: ${DEFAULT-VALUE}).")
    private int costCycles;

    @Option(
            names = "--quick",
            description = "Smoke-test sizes: 500ms warm-up, 1 round of 1s, 10,000 W4 locks, 1,000 W5 names,"
                    + " 1,000 W6 virtual threads, 200 COST cycles"
                    + " (overrides those options).")
    private boolean quick;

    @Option(
            names = "--json",
            paramLabel = "FILE",
            description = "Also write the run to FILE as JSON lines: the header (date, machine, sizes, this"
                    + " command's arguments), then every result with its per-round figures; --from-json reads it back.")
    private Path jsonFile;

    @Option(
            names = "--charts",
            paramLabel = "DIR",
            description = "Also write one SVG chart per backend, DIR/<backend>.svg: a panel per workload, a bar per"
                    + " implementation, dlock's ratios to the best anchor and the floor, and the command.")
    private Path charts;

    @Option(
            names = "--from-json",
            paramLabel = "FILE",
            description = "Run nothing: read a run that --json saved and print its table, and write its --report"
                    + " and --charts (only those, --quiet and --help go with it).")
    private Path fromJson;

    @Option(
            names = "--report",
            paramLabel = "FILE",
            defaultValue = "dlock-bench.html",
            description = "Where to write the HTML report (bar charts of each workload and its latency"
                    + " percentiles), or none (default: ${DEFAULT-VALUE}).")
    private String report;

    @Option(
            names = {"-q", "--quiet"},
            description = "No progress and no start-up lines; the table, the JSON lines and errors still print.")
    private boolean quiet;

    @Option(
            names = "--redis-server",
            paramLabel = "PATH",
            description =
                    "The redis-server binary (default: -Ddlock.test.redisServer, $DLOCK_REDIS_SERVER, or the PATH).")
    private String redisServer;

    @Option(
            names = "--zk-fsync",
            description = "ZooKeeper fsyncs its transaction log before it answers (forceSync=yes; default: no, as"
                    + " Redis runs without AOF).")
    private boolean zooKeeperFsync;

    /**
     * Creates the command; picocli fills in its fields.
     */
    public BenchCommand() {}

    /**
     * Runs {@code dlock bench} on its own and exits the JVM with its status.
     *
     * <p>Blocking: until the run is done. Thread-safety: a process entry point. On failure: exits
     * 1 (run failed) or 2 (bad options), after printing why.
     *
     * @param args the options, for example {@code --quick --workloads W1}
     */
    public static void main(String[] args) {
        String[] withCommand = new String[args.length + 1];
        withCommand[0] = "bench";
        System.arraycopy(args, 0, withCommand, 1, args.length);
        io.dlock.cli.Main.main(withCommand);
    }

    /**
     * Runs the benchmark: starts the servers, runs the workloads, prints the report, stops the
     * servers.
     *
     * <p>Blocking: for the whole run (about 5 minutes with defaults). Thread-safety: one invocation
     * at a time. On failure: returns 1 after printing the error; every server and worker JVM it
     * started is stopped.
     *
     * @return the exit status
     * @throws CommandLine.ParameterException for invalid options (exit status 2)
     */
    @Override
    public Integer call() {
        if (fromJson != null) {
            return render(fromJson);
        }
        RunConfig config = validate();
        List<Backend> chosenBackends = parseBackends();
        List<LockImpl> chosen = chooseImpls(chosenBackends);
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        BenchProgress progress = new BenchProgress(err, BenchProgress.auto(quiet));
        PrintWriter log = quiet ? new PrintWriter(java.io.Writer.nullWriter()) : progress.writer();
        String failure = "";
        List<Result> results = new ArrayList<>();
        Map<LockImpl, BenchClient> clients = new EnumMap<>(LockImpl.class);
        int status = 0;
        Map<String, Object> header = header(config, chosen);
        header.put("args", List.copyOf(spec.commandLine().getParseResult().expandedArgs()));
        if (chosenBackends.contains(Backend.ZOOKEEPER)) {
            header.put("zooKeeperForceSync", zooKeeperFsync);
        }
        out.println("dlock bench " + Report.toJson(header));
        out.flush();
        try (BenchServers servers = BenchServers.start(chosenBackends, redisServer, zooKeeperFsync)) {
            servers.describe().forEach(s -> log.println("started " + s));
            progress.phase("opening clients");
            try {
                for (LockImpl impl : chosen) {
                    clients.put(impl, impl.open(servers.servers()));
                }
                runWorkloads(
                        new Workloads(config, servers.servers(), servers.pids(), clients, log),
                        chosen,
                        results,
                        progress);
            } finally {
                // Before the servers stop, so that no client spends its close reconnecting.
                for (BenchClient c : clients.values()) {
                    try {
                        c.close();
                    } catch (RuntimeException e) {
                        err.println("closing a client failed: " + e);
                    }
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            progress.close();
            err.println("interrupted");
            failure = "interrupted";
            status = 1;
        } catch (RuntimeException e) {
            progress.close();
            e.printStackTrace(err);
            err.println("bench failed: " + e);
            BenchErrors.advice(e).ifPresent(a -> err.println("what to do: " + a));
            failure = e.toString();
            status = 1;
        } finally {
            progress.close();
        }
        Report.table(out, results);
        out.println();
        List<String> lines = new ArrayList<>();
        for (Result r : results) {
            lines.add(Report.json(r, results));
        }
        lines.forEach(out::println);
        out.flush();
        if (jsonFile != null) {
            new RunFile(header, results, failure).write(jsonFile);
        }
        writeReport(header, results, failure, out);
        if (charts != null) {
            writeCharts(charts, header, results, failure, out); // like the report: says so, the run stands
        }
        long overlaps = results.stream().mapToLong(Result::overlaps).sum();
        if (overlaps > 0) {
            err.println("MUTUAL EXCLUSION VIOLATED: " + overlaps + " overlapping critical sections");
            status = 1;
        }
        err.flush();
        return status;
    }

    /** The options {@code --from-json} goes with: the rest shape a run, and it runs nothing. */
    private static final java.util.Set<String> RENDER_OPTIONS =
            java.util.Set.of("--from-json", "--charts", "--report", "--quiet", "--help", "--version");

    /**
     * {@code --from-json}: reads the whole file first (a bad line writes nothing), then prints the
     * table and writes the report and charts that were asked for.
     */
    private int render(Path file) {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        for (CommandLine.Model.OptionSpec o :
                spec.commandLine().getParseResult().matchedOptions()) {
            if (!RENDER_OPTIONS.contains(o.longestName())) {
                throw new CommandLine.ParameterException(
                        spec.commandLine(),
                        "--from-json draws a saved run and runs nothing, so " + o.longestName()
                                + " does not go with it; it takes only --charts, --report and --quiet");
            }
        }
        RunFile run;
        try {
            run = RunFile.read(file);
        } catch (IllegalArgumentException | UncheckedIOException e) {
            err.println("dlock bench: " + e.getMessage());
            err.println("dlock bench: nothing written");
            err.flush();
            return 2;
        }
        out.println("dlock bench " + Report.toJson(run.header()));
        Report.table(out, run.results());
        out.println();
        out.println("read " + run.results().size() + " results from " + file);
        out.flush();
        int status = 0;
        if (spec.commandLine().getParseResult().hasMatchedOption("--report")
                && !writeReport(run.header(), run.results(), run.failure(), out)) {
            status = 1;
        }
        if (charts != null && !writeCharts(charts, run.header(), run.results(), run.failure(), out)) {
            status = 1;
        }
        return status;
    }

    private static boolean writeCharts(
            Path dir, Map<String, Object> header, List<Result> results, String failure, PrintWriter out) {
        try {
            List<Path> written = Charts.write(dir, header, results, failure);
            out.println("charts: "
                    + (written.isEmpty()
                            ? "none (no charted results)"
                            : String.join(
                                    ", ", written.stream().map(Path::toString).toList())));
            out.flush();
            return true;
        } catch (UncheckedIOException | java.nio.file.InvalidPathException e) {
            out.println("dlock bench: no charts: " + e.getMessage());
            out.flush();
            return false;
        }
    }

    private boolean writeReport(Map<String, Object> header, List<Result> results, String failure, PrintWriter out) {
        if (report.equalsIgnoreCase("none")) {
            return true;
        }
        boolean ok = true;
        try {
            Path written = HtmlReport.write(Path.of(report), header, results, failure);
            out.println("report: " + written + " (" + results.size() + " results)");
        } catch (UncheckedIOException | java.nio.file.InvalidPathException e) {
            out.println("dlock bench: no report: " + e.getMessage());
            ok = false;
        }
        out.flush();
        return ok;
    }

    private void runWorkloads(Workloads w, List<LockImpl> chosen, List<Result> results, BenchProgress progress)
            throws InterruptedException {
        List<LockImpl> contendable =
                chosen.stream().filter(LockImpl::contendable).toList();
        for (String workload : WORKLOADS) {
            if (!workloads.contains(workload)) {
                continue;
            }
            progress.phase(workload);
            int before = results.size();
            switch (workload) {
                case "W1" -> results.addAll(w.w1(chosen));
                case "W2" -> results.addAll(w.w2(contendable));
                case "W3" -> results.addAll(w.w3(contendable));
                case "W4" -> results.addAll(w.w4(contendable));
                case "W5" -> results.addAll(w.w5(chosen));
                case "W6" -> results.addAll(w.w6(contendable));
                case "SCALE" -> results.addAll(w.scale(chosen));
                default -> results.addAll(w.cost(chosen));
            }
            results.subList(before, results.size()).forEach(progress::measured);
        }
    }

    RunConfig validate() {
        for (String w : workloads) {
            if (!WORKLOADS.contains(w.toUpperCase(Locale.ROOT))) {
                throw new CommandLine.ParameterException(
                        spec.commandLine(), "unknown workload '" + w + "'; known: " + String.join(", ", WORKLOADS));
            }
        }
        workloads.replaceAll(w -> w.toUpperCase(Locale.ROOT));
        Duration wu = quick ? Duration.ofMillis(500) : warmup;
        Duration d = quick ? Duration.ofSeconds(1) : duration;
        int r = quick ? 1 : rounds;
        int w4 = quick ? 10_000 : w4Locks;
        int cc = quick ? 200 : costCycles;
        positive("--duration", d.isZero() || d.isNegative() ? 0 : 1);
        positive("--rounds", r);
        positive("--w2-threads", w2Threads);
        positive("--w3-jvms", w3Jvms);
        positive("--w3-threads", w3Threads);
        positive("--w4-locks", w4);
        positive("--w4-threads", w4Threads);
        positive("--cost-cycles", cc);
        if (wu.isNegative()) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--warmup must not be negative: " + wu);
        }
        Map<String, Duration> warmups = new LinkedHashMap<>();
        warmupOf.forEach((workload, text) -> {
            String w = workload.toUpperCase(Locale.ROOT);
            if (!WORKLOADS.contains(w)) {
                throw new CommandLine.ParameterException(
                        spec.commandLine(),
                        "--warmup-of: unknown workload '" + workload + "'; known: " + String.join(", ", WORKLOADS));
            }
            Duration each;
            try {
                each = new DurationConverter().convert(text);
            } catch (CommandLine.TypeConversionException e) {
                throw new CommandLine.ParameterException(
                        spec.commandLine(), "--warmup-of " + w + ": " + e.getMessage());
            }
            warmups.put(w, quick ? wu : each);
        });
        if (w4Threads > w4) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(), "--w4-threads (" + w4Threads + ") must not exceed --w4-locks (" + w4 + ")");
        }
        int w5n = quick ? 1_000 : w5Names;
        int w6t = quick ? 1_000 : w6Threads;
        positive("--w5-threads", w5Threads);
        positive("--w5-names", w5n);
        positive("--w6-locks", w6Locks);
        positive("--scale-threads", scaleThreads);
        scaleJvms.forEach(n -> positive("--scale-jvms", n));
        scaleNames.forEach(n -> positive("--scale-names", n));
        if (scaleJvms.stream().anyMatch(n -> n > MAX_SCALE_JVMS)) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(), "--scale-jvms: at most " + MAX_SCALE_JVMS + " worker JVMs, got " + scaleJvms);
        }
        if (w6t <= w6Locks) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(),
                    "--w6-threads (" + w6t + ") must exceed --w6-locks (" + w6Locks + "): the others queue");
        }
        return new RunConfig(
                wu,
                Map.copyOf(warmups),
                d,
                r,
                w2Threads,
                w3Jvms,
                w3Threads,
                w4,
                w4Threads,
                cc,
                w5Threads,
                w5n,
                w6t,
                w6Locks,
                jdk21Java(),
                List.copyOf(new java.util.TreeSet<>(scaleJvms)),
                List.copyOf(new java.util.TreeSet<>(scaleNames)),
                scaleThreads);
    }

    /** W6's {@code java}, checked only when W6 runs: a missing JDK says how to get one. */
    private Path jdk21Java() {
        String fromEnv = System.getenv("DLOCK_JDK21");
        Path home = jdk21 != null ? jdk21 : Path.of(fromEnv != null && !fromEnv.isBlank() ? fromEnv : DEFAULT_JDK21);
        Path java = home.resolve("bin").resolve("java");
        if (workloads.contains("W6") && !Files.isExecutable(java)) {
            String why = "W6 runs virtual threads on a JDK 21 or newer, and " + java + " is not executable: install"
                    + " one (Debian: temurin-25-jdk from Adoptium, or openjdk-21-jdk) and pass --jdk21 DIR or set"
                    + " DLOCK_JDK21";
            if (spec.commandLine().getParseResult().hasMatchedOption("--workloads")) {
                throw new CommandLine.ParameterException(spec.commandLine(), why + ", or leave W6 out of --workloads");
            }
            workloads.remove("W6");
            spec.commandLine().getErr().println("dlock bench: W6 left out. " + why + ".");
        }
        return java;
    }

    private void positive(String option, int value) {
        if (value < 1) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(),
                    option + " must be at least 1" + (option.equals("--duration") ? "ms" : "") + ", was " + value);
        }
    }

    private List<Backend> parseBackends() {
        List<Backend> out = new ArrayList<>();
        for (String b : backends) {
            Backend backend =
                    switch (b.trim().toLowerCase(Locale.ROOT)) {
                        case "zookeeper", "zk" -> Backend.ZOOKEEPER;
                        case "redis" -> Backend.REDIS;
                        case "memcached" -> Backend.MEMCACHED;
                        case "postgresql", "postgres" -> Backend.POSTGRESQL;
                        case "mariadb", "mysql" -> Backend.MARIADB;
                        case "etcd" -> Backend.ETCD;
                        default -> throw new CommandLine.ParameterException(
                                spec.commandLine(),
                                "unknown backend '" + b
                                        + "'; known: zookeeper, redis, memcached, postgresql, mariadb, etcd");
                    };
            if (!out.contains(backend)) {
                out.add(backend);
            }
        }
        return out;
    }

    private List<LockImpl> chooseImpls(List<Backend> chosenBackends) {
        List<LockImpl> out = new ArrayList<>();
        if (impls.isEmpty()) {
            for (LockImpl impl : LockImpl.values()) {
                if (chosenBackends.contains(impl.backend()) && impl.inDefaultSet()) {
                    out.add(impl);
                }
            }
            return out;
        }
        for (String label : impls) {
            LockImpl impl;
            try {
                impl = LockImpl.parse(label);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
            }
            if (!chosenBackends.contains(impl.backend())) {
                throw new CommandLine.ParameterException(
                        spec.commandLine(),
                        "implementation '" + impl.label() + "' runs on "
                                + impl.backend().label() + ", which is not among --backends " + backends);
            }
            if (!out.contains(impl)) {
                out.add(impl);
            }
        }
        return out;
    }

    private static Map<String, Object> header(RunConfig c, List<LockImpl> impls) {
        Map<String, Object> h = new LinkedHashMap<>();
        h.put("date", Instant.now().toString());
        h.put("cpus", Runtime.getRuntime().availableProcessors());
        h.put("cpu", cpuModel());
        h.put("memoryGiB", memoryGiB());
        h.put("os", System.getProperty("os.name") + " " + System.getProperty("os.version"));
        h.put("java", System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version"));
        h.put("impls", impls.stream().map(LockImpl::label).toList());
        h.put("warmup", c.warmup().toString());
        if (!c.warmups().isEmpty()) {
            h.put("warmupOf", new java.util.TreeMap<>(c.warmups()).toString());
        }
        h.put("duration", c.duration().toString());
        h.put("rounds", c.rounds());
        h.put("w2Threads", c.w2Threads());
        h.put("w3", c.w3Jvms() + "x" + c.w3Threads());
        h.put("w4Locks", c.w4Locks());
        h.put("w4Threads", c.w4Threads());
        h.put("costCycles", c.costCycles());
        h.put("w5Threads", c.w5Threads());
        h.put("w5Names", c.w5Names());
        h.put("w6Threads", c.w6Threads());
        h.put("w6Locks", c.w6Locks());
        h.put("scaleThreads", c.scaleThreads());
        return h;
    }

    /** The machine's memory in GiB, rounded, or 0 where the JVM cannot tell. */
    private static long memoryGiB() {
        if (java.lang.management.ManagementFactory.getOperatingSystemMXBean()
                instanceof com.sun.management.OperatingSystemMXBean os) {
            return Math.round(os.getTotalMemorySize() / (double) (1L << 30));
        }
        return 0;
    }

    private static String cpuModel() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    return line.substring(line.indexOf(':') + 1).trim();
                }
            }
        } catch (IOException | UncheckedIOException e) {
            // not Linux
        }
        return System.getProperty("os.arch");
    }

    /** Parses durations as dlock's URIs write them: {@code 3s}, {@code 1500ms}, {@code 2m}. Stateless. */
    static final class DurationConverter implements CommandLine.ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            try {
                return BackendUri.duration("duration", value);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(
                        "'" + value + "' is not a duration such as 3s, 1500ms, 2m");
            }
        }
    }
}
