package io.dlock.cli;

import io.dlock.cli.internal.DurationConverter;
import io.dlock.cli.internal.ErrorAdvice;
import io.dlock.cli.internal.Progress;
import io.dlock.cli.internal.report.Timeline;
import io.dlock.cli.internal.torture.BackendTargets;
import io.dlock.cli.internal.torture.FaultKind;
import io.dlock.cli.internal.torture.Library;
import io.dlock.cli.internal.torture.Network;
import io.dlock.cli.internal.torture.Primitive;
import io.dlock.cli.internal.torture.TortureConfig;
import io.dlock.cli.internal.torture.TortureProgress;
import io.dlock.cli.internal.torture.TortureReport;
import io.dlock.cli.internal.torture.TortureResult;
import io.dlock.cli.internal.torture.TortureRun;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.Callable;
import org.jspecify.annotations.Nullable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code dlock torture}: worker JVMs take one lock and read-modify-write a fenced store with their
 * fencing tokens while the torture injects a bounded random schedule of faults (paused and killed
 * holders, a server killed and restarted, partitions through a fault proxy); then it checks the
 * store's history (overlaps, lost updates, stale writes), leftovers on the server, stuck workers,
 * and the time the lock took to become usable again after each fault. Prints a table and one JSON
 * summary line; everything it started is stopped before it returns.
 *
 * <p>Exit status: 0 if the run passed, 1 if it found a problem (listed in the output), 2 for bad
 * options.
 *
 * <p>Thread-safety: a command object holds parsed options; use one instance per invocation, from
 * one thread.
 */
@Command(
        name = "torture",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Runs worker JVMs that take one lock and update a fenced store while faults are injected"
                    + " (pause, kill, server-restart, partition); checks for overlaps, lost updates,"
                    + " accepted stale writes, leftovers and recovery time; prints a table and a JSON line.",
            "--uri embedded starts a ZooKeeper server (in a child JVM, so it can be killed) for the run."
        },
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:passed", "1:a problem was found (the output lists it)", "2:invalid options"})
public final class TortureCommand implements Callable<Integer> {

    /** Default for {@code --workers}. */
    public static final int DEFAULT_WORKERS = 3;
    /** The largest {@code --workers}: each is a JVM. */
    public static final int MAX_WORKERS = 16;
    /** The longest {@code --duration}. */
    public static final Duration MAX_DURATION = Duration.ofHours(2);
    /** The shortest {@code --session-timeout} the embedded ZooKeeper grants (two ticks). */
    public static final Duration MIN_SESSION_TIMEOUT = Duration.ofSeconds(1);
    /** The longest {@code --session-timeout}. */
    public static final Duration MAX_SESSION_TIMEOUT = Duration.ofSeconds(60);

    @Spec
    private CommandSpec spec;

    @Option(
            names = "--uri",
            paramLabel = "URI",
            defaultValue = BackendTargets.EMBEDDED,
            description =
                    "embedded (a ZooKeeper the torture starts), embedded:zookeeper, embedded:zookeeper-ensemble"
                            + " (3 servers; server-restart kills the leader), embedded:redis, embedded:redis-volatile"
                            + " (no persistence), embedded:etcd, embedded:postgres, embedded:mariadb, embedded:mariadb-session,"
                            + " embedded:memcached, or"
                            + " zookeeper://host:port[/path] (an existing server; no server-restart) (default: ${DEFAULT-VALUE}).")
    private String uri;

    @Option(
            names = "--primitive",
            paramLabel = "KIND",
            defaultValue = "exclusive",
            description = "What the workers take: exclusive (one lock), read-write (read or write locks, see"
                    + " --read-percent; readers may overlap readers, never a writer), semaphore (one permit each"
                    + " of --permits; never more inside) or multi (a multi-lock over --parts names, each part's"
                    + " store fenced with that part's token) or election (each worker a candidate; the leader"
                    + " writes with its term number). The backend must support it"
                    + " (default: ${DEFAULT-VALUE}).")
    private String primitive;

    @Option(
            names = "--read-percent",
            paramLabel = "PCT",
            defaultValue = "50",
            description = "read-write: the share of grants that are read locks, 0 to 100 (default: ${DEFAULT-VALUE}).")
    private int readPercent;

    @Option(
            names = "--permits",
            paramLabel = "N",
            description = "semaphore: its permits, 1 to " + MAX_WORKERS + " (default: workers - 1).")
    private Integer permits;

    @Option(
            names = "--parts",
            paramLabel = "K",
            defaultValue = "3",
            description = "multi: how many names the multi-lock spans, 1 to 8 (default: ${DEFAULT-VALUE}).")
    private int parts;

    @Option(
            names = "--check-valid",
            description = "Workers check Lease.isValid() right before each write and skip it when the lease is no"
                    + " longer valid, as a careful user without fencing would; with --no-fenced the run counts the"
                    + " stale writes that still got through, per fault kind.")
    private boolean checkValid;

    @Option(
            names = "--library",
            paramLabel = "LIB",
            defaultValue = "dlock",
            description = "Whose lock the workers take: dlock, or for comparison curator (InterProcessMutex, or"
                    + " LeaderLatch with --primitive election, on ZooKeeper), redisson (RLock, on Redis) or spring"
                    + " (LockRegistryLeaderInitiator on a JdbcLockRegistry, --primitive election --no-fenced, on"
                    + " PostgreSQL); these need the anchors' jar: ./dlock torture --library ... runs from"
                    + " dlock-benchmarks (default: ${DEFAULT-VALUE}).")
    private String library;

    @Option(
            names = "--workers",
            paramLabel = "N",
            defaultValue = "" + DEFAULT_WORKERS,
            description = "Worker JVMs, 2 to " + MAX_WORKERS + " (default: ${DEFAULT-VALUE}).")
    private int workers;

    @Option(
            names = "--duration",
            paramLabel = "DURATION",
            defaultValue = "60s",
            converter = DurationConverter.class,
            description = "How long to inject faults, like 60s or 5m (default: ${DEFAULT-VALUE}).")
    private Duration duration;

    @Option(
            names = "--faults",
            paramLabel = "LIST",
            defaultValue = "pause,kill,server-restart,partition",
            description = "Comma-separated: pause, kill, server-restart, partition, all or none"
                    + " (default: ${DEFAULT-VALUE}; server-restart only with an embedded server).")
    private String faults;

    @Option(
            names = "--fenced",
            negatable = true,
            defaultValue = "true",
            fallbackValue = "true",
            description = "The store refuses stale fencing tokens; --no-fenced shows what happens without"
                    + " (default: ${DEFAULT-VALUE}).")
    private boolean fenced;

    @Option(
            names = {"--session-timeout", "--lease-time"},
            paramLabel = "DURATION",
            defaultValue = "2s",
            converter = DurationConverter.class,
            description = "The workers' session timeout (ZooKeeper) or lease time (Redis): how long a dead or"
                    + " cut-off holder keeps the lock, 1s to 60s (default: ${DEFAULT-VALUE}).")
    private Duration sessionTimeout;

    @Option(
            names = "--recovery-margin",
            paramLabel = "DURATION",
            defaultValue = "2s",
            converter = DurationConverter.class,
            description = "How long recovery after a fault may take beyond the session timeout"
                    + " (default: ${DEFAULT-VALUE}).")
    private Duration recoveryMargin;

    @Option(
            names = "--restart-margin",
            paramLabel = "DURATION",
            defaultValue = "1s",
            converter = DurationConverter.class,
            description = "How long recovery after a server restart may take beyond the session timeout (lease"
                    + " time), counted from when the server serves again (default: ${DEFAULT-VALUE}).")
    private Duration restartMargin;

    @Option(
            names = "--server-downtime",
            paramLabel = "MIN..MAX",
            description = "How long a killed server stays down before its restart, like 1s..5s or 2s"
                    + " (default: 0s to 1.5 session timeouts).")
    private String serverDowntime;

    @Option(
            names = "--back-to-back",
            negatable = true,
            defaultValue = "false",
            fallbackValue = "true",
            description = "Inject the next fault after the quiet gap (1 to 2 s) without waiting for the lock to"
                    + " recover from the last one, so server restarts follow each other closely; each fault's"
                    + " recovery is read from the store's history at the end (default: ${DEFAULT-VALUE}).")
    private boolean backToBack;

    @Option(
            names = "--network",
            paramLabel = "HOW",
            defaultValue = "auto",
            description = "How partition cuts a worker off: iptables (the worker in a network namespace of its own,"
                    + " iptables dropping its packets: its TCP stack sees a silent peer; needs root, ip and"
                    + " iptables), proxy (its fault proxy stops forwarding) or auto (iptables where possible, else"
                    + " the proxy; the run says which) (default: ${DEFAULT-VALUE}).")
    private String network;

    @Option(
            names = "--seed",
            paramLabel = "N",
            description = "Seed of the fault schedule, to repeat a run (default: random, printed).")
    private Long seed;

    @Option(
            names = "--work-ms",
            paramLabel = "MS",
            defaultValue = "5",
            description = "Time spent inside each critical section, 0 to 1000 ms (default: ${DEFAULT-VALUE}).")
    private long workMs;

    @Option(
            names = "--max-faults",
            paramLabel = "N",
            defaultValue = "1000",
            description = "The most faults injected (default: ${DEFAULT-VALUE}).")
    private int maxFaults;

    @Option(
            names = "--report",
            paramLabel = "FILE",
            defaultValue = "dlock-torture.html",
            description = "Where to write the HTML report (a timeline of every critical section, fault and lock"
                    + " loss, and the summary), or none (default: ${DEFAULT-VALUE}).")
    private String report;

    @Option(
            names = {"-q", "--quiet"},
            description = "No progress and no per-fault lines: only the verdict and the report's path.")
    private boolean quiet;

    @Option(
            names = "--json",
            description = "Only the JSON summary line on standard output (for scripts and CI); the exit status"
                    + " gives the verdict.")
    private boolean json;

    /**
     * Creates the command; picocli fills in its options.
     */
    public TortureCommand() {}

    /**
     * Validates the options, runs the torture and prints its progress, the table and the JSON line.
     *
     * <p>Blocking: for about {@code --duration} plus start-up and checks (tens of seconds).
     * Thread-safety: one invocation at a time. On failure: every process and server the run
     * started is stopped before this method returns; a run that cannot start prints why and gives
     * status 1.
     *
     * @return 0 if the run passed, 1 otherwise
     * @throws CommandLine.ParameterException for invalid options (status 2)
     */
    @Override
    public Integer call() {
        TortureConfig config = validate();
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        boolean silent = quiet || json;
        TortureProgress listener = new TortureProgress();
        TortureResult result;
        try (Progress progress = new Progress(out, Progress.auto(silent), listener::status)) {
            PrintWriter runOut = silent ? new PrintWriter(java.io.Writer.nullWriter()) : progress.writer();
            result = new TortureRun(config, runOut, network(), listener).run();
        } catch (TortureRun.UnsupportedPrimitive e) {
            out.flush();
            err.println("Invalid value for option '" + e.option() + "': " + e.getMessage());
            err.flush();
            return 2;
        } catch (RuntimeException e) {
            out.flush();
            err.println("dlock torture: could not run: " + e.getMessage());
            ErrorAdvice.advice(e).ifPresent(a -> err.println("what to do: " + a));
            err.flush();
            return 1;
        }
        if (json) {
            out.println(result.json());
        } else {
            if (!quiet) {
                out.println();
                out.print(result.table());
                out.println();
            }
            if (result.passed()) {
                out.println("PASS");
            } else {
                out.println("FAIL:");
                result.problems().forEach(p -> out.println("  - " + p));
            }
            if (!quiet) {
                out.println(result.json());
            }
        }
        out.flush();
        writeReport(result, listener, json ? err : out);
        return result.passed() ? 0 : 1;
    }

    private void writeReport(TortureResult result, TortureProgress listener, PrintWriter where) {
        if (report.equalsIgnoreCase("none") || listener.recording().isEmpty()) {
            return;
        }
        try {
            Timeline timeline = TortureReport.timeline(
                    listener.recording().get(),
                    "Timeline: " + result.config().workers() + " workers on " + result.description());
            Path written = TortureReport.write(Path.of(report), result, timeline);
            where.println("report: " + written + " (" + timeline.lanes() + " lanes, " + timeline.sections()
                    + " critical sections in " + timeline.bars() + " bars, " + timeline.faults() + " faults, "
                    + timeline.losses() + " lock losses)");
        } catch (UncheckedIOException | java.nio.file.InvalidPathException e) {
            where.println("dlock torture: no report: " + e.getMessage());
        }
        where.flush();
    }

    private Network network() {
        return switch (network.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "auto" -> Network.AUTO;
            case "iptables" -> Network.IPTABLES;
            case "proxy" -> Network.PROXY;
            default -> throw bad("--network", "must be auto, iptables or proxy, was '" + network + "'");
        };
    }

    private TortureConfig validate() {
        network();
        Primitive chosen;
        try {
            chosen = Primitive.parse(primitive);
        } catch (IllegalArgumentException e) {
            throw bad("--primitive", e.getMessage());
        }
        Library lib;
        try {
            lib = Library.parse(library);
        } catch (IllegalArgumentException e) {
            throw bad("--library", e.getMessage());
        }
        if (!lib.primitives().contains(chosen)) {
            throw bad(
                    "--library",
                    lib.cliName() + " workers take " + lib.primitivesText() + ", not --primitive " + chosen.cliName());
        }
        if (lib == Library.SPRING && fenced) {
            throw bad(
                    "--fenced",
                    "spring's leader election has no term number to fence with: run it with --no-fenced (the"
                            + " store then refuses nothing and counts the overlaps and stale writes it let through)");
        }
        if (readPercent < 0 || readPercent > 100) {
            throw bad("--read-percent", "must be between 0 and 100, was " + readPercent);
        }
        if (permits != null && (permits < 1 || permits > MAX_WORKERS)) {
            throw bad("--permits", "must be between 1 and " + MAX_WORKERS + ", was " + permits);
        }
        if (parts < 1 || parts > TortureConfig.MAX_PARTS) {
            throw bad("--parts", "must be between 1 and " + TortureConfig.MAX_PARTS + ", was " + parts);
        }
        try {
            BackendTargets.validate(uri);
        } catch (IllegalArgumentException e) {
            throw bad("--uri", e.getMessage());
        }
        if (workers < 2 || workers > MAX_WORKERS) {
            throw bad("--workers", "must be between 2 and " + MAX_WORKERS + ", was " + workers);
        }
        if (duration.isZero() || duration.isNegative() || duration.compareTo(MAX_DURATION) > 0) {
            throw bad("--duration", "must be between 1s and 2h, was " + DurationConverter.toParameter(duration));
        }
        if (sessionTimeout.compareTo(MIN_SESSION_TIMEOUT) < 0 || sessionTimeout.compareTo(MAX_SESSION_TIMEOUT) > 0) {
            // Both names are one option to picocli: name the one the user typed.
            String named = spec.commandLine().getParseResult().originalArgs().stream()
                            .anyMatch(a -> a.startsWith("--lease-time"))
                    ? "--lease-time"
                    : "--session-timeout";
            throw bad(named, "must be between 1s and 60s, was " + DurationConverter.toParameter(sessionTimeout));
        }
        if (recoveryMargin.isNegative() || recoveryMargin.compareTo(MAX_SESSION_TIMEOUT) > 0) {
            throw bad(
                    "--recovery-margin",
                    "must be between 0s and 60s, was " + DurationConverter.toParameter(recoveryMargin));
        }
        if (workMs < 0 || workMs > 1_000) {
            throw bad("--work-ms", "must be between 0 and 1000, was " + workMs);
        }
        if (maxFaults < 0) {
            throw bad("--max-faults", "must be >= 0, was " + maxFaults);
        }
        if (restartMargin.isNegative() || restartMargin.compareTo(MAX_SESSION_TIMEOUT) > 0) {
            throw bad(
                    "--restart-margin",
                    "must be between 0s and 60s, was " + DurationConverter.toParameter(restartMargin));
        }
        Duration downMin = Duration.ZERO;
        Duration downMax = sessionTimeout.multipliedBy(3).dividedBy(2);
        if (serverDowntime != null) {
            String[] range = serverDowntime.trim().split("\\.\\.", -1);
            try {
                if (range.length > 2) {
                    throw new IllegalArgumentException("expected MIN..MAX");
                }
                downMin = DurationConverter.parse(range[0].trim());
                downMax = range.length == 2 ? DurationConverter.parse(range[1].trim()) : downMin;
            } catch (IllegalArgumentException | CommandLine.TypeConversionException e) {
                throw bad(
                        "--server-downtime",
                        "'" + serverDowntime + "' is not a duration or MIN..MAX: " + e.getMessage());
            }
            if (downMax.compareTo(downMin) < 0 || downMax.compareTo(MAX_SESSION_TIMEOUT) > 0) {
                throw bad(
                        "--server-downtime",
                        "must be a range within 0s..60s with MIN <= MAX, was '" + serverDowntime + "'");
            }
        }
        Set<FaultKind> kinds;
        try {
            kinds = FaultKind.parseList(faults);
        } catch (IllegalArgumentException e) {
            throw bad("--faults", e.getMessage());
        }
        if (kinds.contains(FaultKind.SERVER_RESTART) && !BackendTargets.ownsServer(uri)) {
            throw bad(
                    "--faults",
                    "server-restart needs a server the torture starts (--uri embedded); drop it"
                            + " for an external server");
        }
        long chosenSeed = seed != null ? seed : new java.util.Random().nextLong() & 0xFFFF_FFFFL;
        return new TortureConfig(
                uri,
                workers,
                duration,
                kinds,
                fenced,
                chosenSeed,
                sessionTimeout,
                recoveryMargin,
                workMs,
                maxFaults,
                backToBack,
                downMin,
                downMax,
                restartMargin,
                chosen,
                readPercent,
                permits != null ? permits : Math.max(1, workers - 1),
                parts,
                checkValid,
                lib);
    }

    private CommandLine.ParameterException bad(String option, @Nullable String message) {
        return new CommandLine.ParameterException(
                spec.commandLine(), "Invalid value for option '" + option + "': " + message);
    }
}
