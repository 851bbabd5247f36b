package io.dlock.cli;

import io.dlock.cli.internal.DemoReport;
import io.dlock.cli.internal.DurationConverter;
import io.dlock.cli.internal.ErrorAdvice;
import io.dlock.cli.internal.OversellDemo;
import io.dlock.cli.internal.RoundResult;
import io.dlock.cli.internal.SummaryTable;
import io.dlock.cli.internal.report.Timeline;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code dlock demo}: the oversell scenario. Worker JVMs sell items from a small stock service,
 * first without a lock (items get oversold), then with dlock (exactly the stock is sold), then
 * with dlock while the lock holder is killed with {@code kill -9}, then while it is frozen for
 * longer than its session timeout, as by a long GC pause (its late write is rejected by its
 * fencing token). Everything runs on this machine: an embedded ZooKeeper (or the lock server {@code
 * --uri} names) and the stock service in this JVM, the workers as child JVMs; all of them are
 * stopped at the end.
 *
 * <p>Exit status: 0 if round 1 oversold and rounds 2 to 4 did not, and round 4 rejected the stale
 * write; 1 if any of that (or any other expectation the narration states) failed; 2 for bad
 * options.
 *
 * <p>Thread-safety: a command object holds parsed options; use one instance per invocation, from
 * one thread.
 */
@Command(
        name = "demo",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description = {
            "Shows what a distributed lock with fencing tokens prevents: worker JVMs sell items from a"
                    + " shared stock, without a lock, with dlock, with dlock while the lock holder is"
                    + " killed (kill -9), and with dlock while the holder is frozen (a GC pause).",
            "Runs an embedded ZooKeeper and needs no servers, or runs on the lock server --uri names. Takes under a"
                    + " minute."
        },
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
            "0:the demo showed what it should (round 1 oversold, rounds 2-4 did not)",
            "1:a round did not behave as expected; the output says which",
            "2:invalid options"
        })
public final class DemoCommand implements Callable<Integer> {

    /** Default for {@code --stock}. */
    public static final int DEFAULT_STOCK = 20;
    /** Default for {@code --workers}. */
    public static final int DEFAULT_WORKERS = 3;
    /** Default for {@code --session-timeout}. */
    public static final Duration DEFAULT_SESSION_TIMEOUT = Duration.ofSeconds(3);

    /** The largest {@code --stock}: more makes the demo long without showing more. */
    public static final int MAX_STOCK = 1_000;
    /** The largest {@code --workers}: each is a JVM. */
    public static final int MAX_WORKERS = 16;
    /** The shortest {@code --session-timeout} the embedded ZooKeeper grants (two ticks). */
    public static final Duration MIN_SESSION_TIMEOUT = Duration.ofSeconds(1);
    /** The longest {@code --session-timeout} the embedded ZooKeeper grants. */
    public static final Duration MAX_SESSION_TIMEOUT = Duration.ofSeconds(60);

    @Spec
    private CommandSpec spec;

    @Option(
            names = "--stock",
            paramLabel = "N",
            defaultValue = "" + DEFAULT_STOCK,
            description =
                    "Items in stock at the start of each round, 1 to " + MAX_STOCK + " (default: ${DEFAULT-VALUE}).")
    private int stock;

    @Option(
            names = "--workers",
            paramLabel = "W",
            defaultValue = "" + DEFAULT_WORKERS,
            description = "Worker JVMs per round, 2 to " + MAX_WORKERS + " (default: ${DEFAULT-VALUE}).")
    private int workers;

    @Option(
            names = "--session-timeout",
            paramLabel = "DURATION",
            defaultValue = "3s",
            converter = DurationConverter.class,
            description = "The workers' ZooKeeper session timeout: how long a dead or frozen holder keeps the"
                    + " lock; 1s to 60s, written like 3s or 1500ms (default: ${DEFAULT-VALUE}).")
    private Duration sessionTimeout;

    @Option(
            names = "--uri",
            paramLabel = "URI",
            description = "Run on this lock server instead of the embedded ZooKeeper: any dlock URI, such as"
                    + " jdbc:postgresql://127.0.0.1:5432/app?user=u&password=p&createTable=true or redis://127.0.0.1:6379."
                    + " --session-timeout then sets its lease time (unless the URI sets leaseTime or sessionTimeout).")
    private String uri;

    @Option(
            names = "--report",
            paramLabel = "FILE",
            defaultValue = "dlock-demo.html",
            description = "Where to write the HTML report (a timeline of each round and the summary), or none"
                    + " (default: ${DEFAULT-VALUE}).")
    private String report;

    /**
     * Creates the command; picocli fills in its options.
     */
    public DemoCommand() {}

    /**
     * Validates the options and plays the four rounds, printing the narration and a summary table
     * to the command line's output.
     *
     * <p>Blocking: until the demo is over (about 15 s with the defaults). Thread-safety: one invocation at
     * a time. On failure: every process and server the demo started is stopped before this method
     * returns or throws; a failed expectation is printed and gives exit status 1.
     *
     * @return the exit status: 0 if the demo showed what it should, 1 otherwise
     * @throws CommandLine.ParameterException if an option is out of range (picocli prints the
     *     message and the usage, and exits with status 2)
     */
    @Override
    public Integer call() {
        validate();
        PrintWriter out = spec.commandLine().getOut();
        long started = System.nanoTime();
        List<RoundResult> results;
        OversellDemo demo = new OversellDemo(stock, workers, sessionTimeout, out, uri);
        try {
            results = demo.run();
        } catch (RuntimeException e) {
            out.flush();
            PrintWriter err = spec.commandLine().getErr();
            err.println("dlock demo: could not run: " + e.getMessage());
            ErrorAdvice.advice(e).ifPresent(a -> err.println("what to do: " + a));
            err.flush();
            return 1;
        }
        Duration took = Duration.ofNanos(System.nanoTime() - started);
        out.println();
        out.println("Summary");
        out.print(SummaryTable.render(results));
        out.println();
        writeReport(out, results, demo.timelines());
        List<String> problems =
                results.stream().flatMap(r -> r.problems().stream()).toList();
        if (problems.isEmpty()) {
            RoundResult unlocked = results.get(0);
            out.printf(
                    "PASS: without a lock %d items were sold from a stock of %d (%d oversold); with dlock exactly"
                            + " %d, through a kill -9 and a GC pause, where the paused holder's stale write was"
                            + " rejected by its fencing token. (%s)%n",
                    unlocked.sold(), stock, unlocked.oversold(), stock, DurationConverter.toSeconds(took));
            out.flush();
            return 0;
        }
        out.printf("FAIL: the demo did not show what it should (%s):%n", DurationConverter.toSeconds(took));
        for (String problem : problems) {
            out.println("  - " + problem);
        }
        out.flush();
        return 1;
    }

    private void writeReport(PrintWriter out, List<RoundResult> results, List<Timeline> timelines) {
        if (report.equalsIgnoreCase("none")) {
            return;
        }
        String server = uri == null ? "the embedded ZooKeeper" : OversellDemo.redact(uri);
        try {
            Path written = DemoReport.write(Path.of(report), server, results, timelines);
            out.printf(
                    "report: %s (%d rounds, %d sales drawn as %d bars)%n",
                    written,
                    timelines.size(),
                    timelines.stream().mapToInt(Timeline::sections).sum(),
                    timelines.stream().mapToInt(Timeline::bars).sum());
        } catch (UncheckedIOException | InvalidPathException e) {
            out.println("dlock demo: no report: " + e.getMessage());
        }
        out.println();
    }

    private void validate() {
        if (uri != null && uri.isBlank()) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(), "Invalid value for option '--uri': must not be blank");
        }
        if (stock < 1 || stock > MAX_STOCK) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(),
                    "Invalid value for option '--stock': must be between 1 and " + MAX_STOCK + ", was " + stock);
        }
        if (workers < 2 || workers > MAX_WORKERS) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(),
                    "Invalid value for option '--workers': must be between 2 and " + MAX_WORKERS + ", was " + workers
                            + " (rounds 3 and 4 need a second worker to take the lock over)");
        }
        if (sessionTimeout.compareTo(MIN_SESSION_TIMEOUT) < 0 || sessionTimeout.compareTo(MAX_SESSION_TIMEOUT) > 0) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(),
                    "Invalid value for option '--session-timeout': must be between 1s and 60s, was "
                            + DurationConverter.toParameter(sessionTimeout));
        }
    }
}
