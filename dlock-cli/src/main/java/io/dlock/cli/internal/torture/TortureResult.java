package io.dlock.cli.internal.torture;

import io.dlock.testkit.FencingChecker;
import io.dlock.testkit.OccupancyStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * The outcome of one {@code dlock torture} run, with its verdict, rendered as a table for people and
 * one JSON line for machines.
 *
 * <p>Verdict: in fenced mode the run fails on any accepted stale write, lost update, overlap of
 * accepted accesses, lease that dlock still called valid when the store refused it, leftover queue
 * entry, worker that did not stop, fault whose recovery exceeded the bound, or a run with no
 * operations. Unfenced, accepted stale writes and lost updates are expected (that is what fencing
 * is for) and only reported; the other rules still apply.
 *
 * @param config what was run
 * @param backend the backend's name
 * @param description where the server ran
 * @param faults every injected fault, in order
 * @param check the store's history judged by {@link FencingChecker}
 * @param lockLost how many times a worker's {@code onLost} listener fired
 * @param refusedWhileValid store refusals of a lease that {@code isValid()} still reported valid
 * @param timeouts acquisitions that waited the worker's longest wait in vain
 * @param errors failed operations reported by workers (connection trouble during faults)
 * @param stuck workers that did not stop when told
 * @param leftovers queue entries left on the server after every worker stopped
 * @param problems why the run failed; empty when it passed
 * @param faultPhase how long the workload and fault schedule ran
 * @param elapsed the whole run, start-up and checks included
 * @param occupancy for a shared primitive (read-write, semaphore) what the occupancy checker found;
 *     null for exclusive and multi-locks
 * @param staleByFault accepted stale writes by the fault kind injected last before each ({@code
 *     none} before the first fault); empty when there were none or for a semaphore's journal
 * @param skippedWrites writes the workers skipped because {@code isValid()} said the lease was gone
 *     ({@code --check-valid})
 * @param terms for an election, the terms the workers led; {@link Terms#NONE} otherwise
 */
public record TortureResult(
        TortureConfig config,
        String backend,
        String description,
        List<FaultRecord> faults,
        FencingChecker.Report check,
        long lockLost,
        long refusedWhileValid,
        long timeouts,
        long errors,
        List<String> stuck,
        List<String> leftovers,
        List<String> problems,
        Duration faultPhase,
        Duration elapsed,
        OccupancyStore.@Nullable Report occupancy,
        Map<String, Long> staleByFault,
        long skippedWrites,
        Terms terms) {

    /**
     * The terms of an election run ({@code --primitive election}), from the workers' {@code ELECTED}
     * lines and the store.
     *
     * @param elected terms the workers led (one {@code ELECTED} line each)
     * @param notRising terms whose number was not above every term elected before it (by when each
     *     leader began to write; a number elected twice counts): must be 0
     * @param overlappingValid terms that wrote while another's term was valid: sections of accepted
     *     accesses interleaved in the store, plus terms the store refused while the worker still
     *     called them valid
     */
    public record Terms(long elected, long notRising, long overlappingValid) {
        /** Not an election. */
        public static final Terms NONE = new Terms(0, 0, 0);

        /**
         * Reads the terms from the workers' lines: {@code ELECTED <term> <nanoTime>}, and {@code
         * REFUSED <kind> <term> true} for a term refused while valid.
         */
        static Terms of(Map<String, List<String>> workerLines, FencingChecker.Report check) {
            List<long[]> elected = new ArrayList<>(); // {nanoTime, term}
            java.util.Set<String> refusedValid = new java.util.HashSet<>();
            for (Map.Entry<String, List<String>> worker : workerLines.entrySet()) {
                for (String line : worker.getValue()) {
                    String[] f = line.split(" ");
                    if (f[0].equals(TortureWorker.ELECTED) && f.length == 3) {
                        elected.add(new long[] {Long.parseLong(f[2]), Long.parseLong(f[1])});
                    } else if (f[0].equals(TortureWorker.REFUSED) && f.length == 4 && f[3].equals("true")) {
                        refusedValid.add(worker.getKey() + " " + f[2]);
                    }
                }
            }
            elected.sort((a, b) -> Long.compare(a[0] - b[0], 0));
            long notRising = 0;
            long highest = Long.MIN_VALUE;
            for (long[] e : elected) {
                if (e[1] <= highest) {
                    notRising++;
                }
                highest = Math.max(highest, e[1]);
            }
            return new Terms(elected.size(), notRising, check.acceptedOverlaps() + refusedValid.size());
        }
    }

    /** Copies the map. */
    public TortureResult {
        staleByFault = Map.copyOf(staleByFault);
    }

    /**
     * Returns a copy with {@code byFault} as {@link #staleByFault()}.
     *
     * @param byFault accepted stale writes by fault kind
     * @return the copy
     */
    TortureResult withStaleByFault(Map<String, Long> byFault) {
        return new TortureResult(
                config,
                backend,
                description,
                faults,
                check,
                lockLost,
                refusedWhileValid,
                timeouts,
                errors,
                stuck,
                leftovers,
                problems,
                faultPhase,
                elapsed,
                occupancy,
                byFault,
                skippedWrites,
                terms);
    }

    /**
     * Builds the result and its verdict from what a run collected. With {@code twoHoldersPossible}
     * (a target whose failover can lose a grant, such as Redis with asynchronous replication) a
     * store refusal of a lease dlock still called valid is the figure measured (a second holder
     * stopped only by the fence), not a failure. {@code occupancy} is the occupancy checker's report
     * of a shared primitive. For a semaphore the store of values is an unfenced journal (holders
     * write side by side), so the fencing rules are judged on the occupancy report alone; and the
     * store may fence out the wrong holder (it cannot know which permit a newer grant reused, see
     * {@link OccupancyStore}), so a refusal of a valid semaphore lease is counted, not failed.
     */
    static TortureResult of(
            TortureConfig config,
            String backend,
            String description,
            List<FaultRecord> faults,
            FencingChecker.Report check,
            Map<String, List<String>> workerLines,
            List<String> stuck,
            List<String> leftovers,
            List<String> runProblems,
            Duration faultPhase,
            Duration elapsed,
            boolean twoHoldersPossible,
            OccupancyStore.@Nullable Report occupancy) {
        boolean semaphore = config.primitive() == Primitive.SEMAPHORE;
        long skipped = 0;
        if (semaphore && occupancy != null) {
            // The journal's holders write side by side unfenced: its overlaps and stale writes say
            // nothing. The semaphore's figures are the occupancy checker's; lost updates are not defined.
            check = new FencingChecker.Report(
                    check.accesses(),
                    check.sections(),
                    check.acceptedWrites(),
                    occupancy.violations(),
                    occupancy.violations(),
                    0,
                    occupancy.staleRefused(),
                    0,
                    occupancy.staleAccepted(),
                    0,
                    check.acceptedWrites(),
                    occupancy.firstProblem());
        }
        long lost = 0;
        long refusedValid = 0;
        long timeouts = 0;
        long errors = 0;
        List<String> problems = new ArrayList<>(runProblems);
        for (Map.Entry<String, List<String>> worker : workerLines.entrySet()) {
            for (String line : worker.getValue()) {
                if (line.startsWith(TortureWorker.LOST + " ")) {
                    lost++;
                } else if (line.startsWith(TortureWorker.REFUSED + " ") && line.endsWith(" true")) {
                    refusedValid++;
                    if (refusedValid == 1 && !twoHoldersPossible && !semaphore) {
                        problems.add("the store refused " + worker.getKey() + " while its lease was still valid ("
                                + line + "): the fencing source went backwards or the loss was noticed late");
                    }
                } else if (line.startsWith(TortureWorker.SKIPPED + " ")) {
                    skipped++;
                } else if (line.equals(TortureWorker.TIMEOUT)) {
                    timeouts++;
                } else if (line.startsWith(TortureWorker.ERROR + " ")) {
                    errors++;
                } else if (line.startsWith(TortureWorker.VIOLATION + " ") && config.fenced()) {
                    if (problems.stream().noneMatch(p -> p.startsWith("the occupancy store"))) {
                        problems.add(
                                "the occupancy store admitted " + worker.getKey() + " against the rule (" + line + ")");
                    }
                } else if (line.startsWith(TortureWorker.FATAL)) {
                    problems.add("worker " + worker.getKey() + " failed: " + line);
                }
            }
        }
        if (check.acceptedWrites() == 0 && !(occupancy != null && config.readPercent() == 100)) {
            problems.add("no write was accepted: the workload did not run");
        }
        if (occupancy != null) {
            if (occupancy.entries() == 0) {
                problems.add("no holder entered the occupancy store: the workload did not run");
            }
            if (config.fenced() && occupancy.violations() > 0) {
                problems.add(occupancy.violations() + " " + config.primitive().cliName()
                        + " rule violations under fencing: " + occupancy.firstProblem());
            }
            if (config.fenced() && occupancy.staleAccepted() > 0) {
                problems.add(occupancy.staleAccepted() + " stale holders admitted under fencing");
            }
            if (occupancy.misuses() > 0) {
                problems.add(occupancy.misuses() + " occupancy misuses (enter twice, leave without enter): "
                        + occupancy.firstProblem());
            }
        }
        if (config.fenced() && !semaphore) {
            if (check.staleWritesAccepted() > 0) {
                problems.add(
                        check.staleWritesAccepted() + " stale writes accepted under fencing: " + check.firstProblem());
            }
            if (check.lostUpdates() > 0 || check.shortfall() != 0) {
                problems.add(check.lostUpdates() + " lost updates (final value short by " + check.shortfall() + ")"
                        + firstProblem(check));
            }
            if (check.acceptedOverlaps() > 0) {
                problems.add(check.acceptedOverlaps() + " overlapping critical sections got through fencing"
                        + firstProblem(check));
            }
        }
        for (FaultRecord f : faults) {
            if (f.failed()) {
                problems.add(f.kind().cliName() + " at " + TortureRun.seconds(Duration.ofMillis(f.atMillis())) + " ("
                        + f.target() + ", " + f.detail() + "): "
                        + (f.recoveryMillis() < 0
                                ? "the lock was not usable again"
                                : "recovery took " + f.recoveryMillis() + " ms")
                        + ", bound " + f.boundMillis() + " ms");
            }
        }
        if (!leftovers.isEmpty()) {
            problems.add(leftovers.size() + " queue entries left behind: " + leftovers);
        }
        Terms terms = Terms.NONE;
        if (config.primitive() == Primitive.ELECTION) {
            terms = Terms.of(workerLines, check);
            if (terms.elected() == 0) {
                problems.add("no candidate was elected: the workload did not run");
            }
            if (terms.notRising() > 0 && config.library() == Library.DLOCK) {
                problems.add(terms.notRising() + " terms not above every term elected before them");
            }
        }
        return new TortureResult(
                config,
                backend,
                description,
                List.copyOf(faults),
                check,
                lost,
                refusedValid,
                timeouts,
                errors,
                List.copyOf(stuck),
                List.copyOf(leftovers),
                List.copyOf(problems),
                faultPhase,
                elapsed,
                occupancy,
                Map.of(),
                skipped,
                terms);
    }

    /**
     * Adds up the reports of several stores (a multi-lock's parts): counts are summed, the first
     * problem is the first store's that has one.
     *
     * @param reports one per store, at least one
     * @return the sum
     */
    static FencingChecker.Report combine(List<FencingChecker.Report> reports) {
        if (reports.size() == 1) {
            return reports.get(0);
        }
        long[] sum = new long[11];
        String first = "";
        for (FencingChecker.Report r : reports) {
            sum[0] += r.accesses();
            sum[1] += r.sections();
            sum[2] += r.acceptedWrites();
            sum[3] += r.overlaps();
            sum[4] += r.acceptedOverlaps();
            sum[5] += r.lostUpdates();
            sum[6] += r.staleWritesRejected();
            sum[7] += r.staleReadsRejected();
            sum[8] += r.staleWritesAccepted();
            sum[9] += r.initialValue();
            sum[10] += r.finalValue();
            if (first.isEmpty()) {
                first = r.firstProblem();
            }
        }
        return new FencingChecker.Report(
                sum[0], sum[1], sum[2], sum[3], sum[4], sum[5], sum[6], sum[7], sum[8], sum[9], sum[10], first);
    }

    /**
     * Returns whether the run passed.
     *
     * @return true when {@link #problems()} is empty
     */
    public boolean passed() {
        return problems.isEmpty();
    }

    /** Recovery figures of one fault kind. */
    private record Recovery(
            int count, int recovered, long p50, long max, long blockedP50, long blockedMax, int cutShort) {}

    private Map<FaultKind, Recovery> recoveries() {
        Map<FaultKind, Recovery> byKind = new EnumMap<>(FaultKind.class);
        for (FaultKind kind : FaultKind.values()) {
            List<Long> times = new ArrayList<>();
            int count = 0;
            List<Long> blocked = new ArrayList<>();
            int cutShort = 0;
            for (FaultRecord f : faults) {
                if (f.kind() == kind) {
                    count++;
                    if (f.cutShort() && !f.recoveredInTime()) {
                        cutShort++;
                    }
                    if (f.blockedMillis() >= 0) {
                        blocked.add(f.blockedMillis());
                    }
                    if (f.recoveryMillis() >= 0) {
                        times.add(f.recoveryMillis());
                    }
                }
            }
            times.sort(null);
            long p50 = times.isEmpty() ? -1 : times.get((times.size() - 1) / 2);
            long max = times.isEmpty() ? -1 : times.get(times.size() - 1);
            blocked.sort(null);
            long blockedP50 = blocked.isEmpty() ? -1 : blocked.get((blocked.size() - 1) / 2);
            long blockedMax = blocked.isEmpty() ? -1 : blocked.get(blocked.size() - 1);
            byKind.put(kind, new Recovery(count, times.size(), p50, max, blockedP50, blockedMax, cutShort));
        }
        return byKind;
    }

    /**
     * Renders the summary table.
     *
     * @return lines ending in a newline
     */
    public String table() {
        StringBuilder t = new StringBuilder();
        t.append(String.format(
                Locale.ROOT,
                "%-16s %8s %9s %9s %13s %13s %9s %12s%n",
                "fault",
                "injected",
                "in bound",
                "cut short",
                "recovery p50",
                "recovery max",
                "bound",
                "blocked max"));
        for (Map.Entry<FaultKind, Recovery> e : recoveries().entrySet()) {
            Recovery r = e.getValue();
            if (r.count() == 0 && !config.faults().contains(e.getKey())) {
                continue;
            }
            t.append(String.format(
                    Locale.ROOT,
                    "%-16s %8d %9d %9d %13s %13s %9s %12s%n",
                    e.getKey().cliName(),
                    r.count(),
                    inBound(e.getKey()),
                    r.cutShort(),
                    ms(r.p50()),
                    ms(r.max()),
                    ms(config.recoveryBound(e.getKey()).toMillis()),
                    ms(r.blockedMax())));
        }
        if (config.primitive() == Primitive.ELECTION) {
            t.append(String.format(
                    Locale.ROOT,
                    "%ntime without a leader (the longest stretch without an accepted write, from the fault"
                            + " until recovery), against the crash-release bound (%s %d ms):%n",
                    backend.equals("zookeeper") ? "session timeout" : "lease time",
                    config.sessionTimeout().toMillis()));
            t.append(String.format(Locale.ROOT, "%-16s %13s %13s%n", "fault", "median", "max"));
            for (Map.Entry<FaultKind, Recovery> e : recoveries().entrySet()) {
                if (e.getValue().count() > 0) {
                    t.append(String.format(
                            Locale.ROOT,
                            "%-16s %13s %13s%n",
                            e.getKey().cliName(),
                            ms(e.getValue().blockedP50()),
                            ms(e.getValue().blockedMax())));
                }
            }
        }
        t.append(System.lineSeparator());
        if (config.primitive() == Primitive.ELECTION) {
            row(t, "terms elected", terms.elected());
            row(t, "terms not rising", terms.notRising());
            row(t, "overlapping valid terms", terms.overlappingValid());
        }
        String mode = config.fenced() ? "" : " (unfenced: expected)";
        row(t, "operations (writes accepted)", check.acceptedWrites());
        row(t, "critical sections seen by the store", check.sections());
        row(t, "overlapping sections (all accesses)", check.overlaps());
        row(t, "overlapping sections (accepted)", check.acceptedOverlaps());
        row(t, "stale writes rejected", check.staleWritesRejected());
        row(t, "stale reads rejected", check.staleReadsRejected());
        row(t, "stale writes accepted" + mode, check.staleWritesAccepted());
        if (config.primitive() == Primitive.SEMAPHORE) {
            t.append(String.format(Locale.ROOT, "%-42s %10s%n", "lost updates", "n/a"));
        } else {
            row(t, "lost updates" + mode, check.lostUpdates());
            row(t, "final value short by" + mode, check.shortfall());
        }
        OccupancyStore.Report occ = occupancy;
        if (occ != null) {
            String occMode = config.fenced() ? "" : " (unfenced: expected)";
            row(t, "holders entered (" + config.primitive().cliName() + ")", occ.entries());
            row(t, "rule violations" + occMode, occ.violations());
            row(t, "stale holders refused", occ.staleRefused());
            row(t, "holders fenced out by newer ones", occ.fencedOut());
            row(t, "stale holders accepted" + occMode, occ.staleAccepted());
            row(
                    t,
                    config.primitive() == Primitive.SEMAPHORE ? "most permits inside" : "most readers inside",
                    config.primitive() == Primitive.SEMAPHORE ? occ.maxPermits() : occ.maxReaders());
            row(t, "occupancy misuses", occ.misuses());
        }
        if (config.checkValid()) {
            row(
                    t,
                    config.library() == Library.DLOCK
                            ? "writes skipped (isValid() false)"
                            : "writes skipped (" + config.library().cliName() + "'s check false)",
                    skippedWrites);
        }
        for (Map.Entry<String, Long> e : new java.util.TreeMap<>(staleByFault).entrySet()) {
            row(t, "stale writes accepted after " + e.getKey(), e.getValue());
        }
        row(t, "lock-lost events (onLost)", lockLost);
        row(t, "refused while lease valid", refusedWhileValid);
        row(t, "acquire timeouts", timeouts);
        row(t, "failed operations (retried)", errors);
        row(t, "leftover queue entries", leftovers.size());
        row(t, "stuck workers", stuck.size());
        return t.toString();
    }

    private int inBound(FaultKind kind) {
        return (int) faults.stream()
                .filter(f -> f.kind() == kind && f.recoveredInTime())
                .count();
    }

    private static void row(StringBuilder t, String label, long value) {
        t.append(String.format(Locale.ROOT, "%-42s %10d%n", label, value));
    }

    private static String ms(long millis) {
        return millis < 0 ? "-" : millis + " ms";
    }

    /**
     * Renders the one-line JSON summary.
     *
     * @return a JSON object without a trailing newline
     */
    public String json() {
        StringBuilder j = new StringBuilder("{");
        field(j, "backend", quote(backend)).append(',');
        field(j, "primitive", quote(config.primitive().cliName())).append(',');
        switch (config.primitive()) {
            case READ_WRITE -> field(j, "readPercent", Integer.toString(config.readPercent()))
                    .append(',');
            case SEMAPHORE -> field(j, "permits", Integer.toString(config.permits()))
                    .append(',');
            case MULTI -> field(j, "parts", Integer.toString(config.parts())).append(',');
            case ELECTION -> field(
                            j,
                            "election",
                            "{\"terms\":" + terms.elected() + ",\"termsNotRising\":" + terms.notRising()
                                    + ",\"overlappingValidTerms\":" + terms.overlappingValid()
                                    + ",\"crashReleaseBoundMs\":"
                                    + config.sessionTimeout().toMillis() + "}")
                    .append(',');
            case EXCLUSIVE -> {}
        }
        field(j, "server", quote(description)).append(',');
        field(j, "fenced", Boolean.toString(config.fenced())).append(',');
        field(j, "workers", Integer.toString(config.workers())).append(',');
        field(j, "durationMs", Long.toString(faultPhase.toMillis())).append(',');
        field(j, "elapsedMs", Long.toString(elapsed.toMillis())).append(',');
        field(j, "seed", Long.toString(config.seed())).append(',');
        field(j, "sessionTimeoutMs", Long.toString(config.sessionTimeout().toMillis()))
                .append(',');
        field(j, "recoveryBoundMs", Long.toString(config.recoveryBound().toMillis()))
                .append(',');
        field(
                        j,
                        "restartBoundMs",
                        Long.toString(
                                config.recoveryBound(FaultKind.SERVER_RESTART).toMillis()))
                .append(',');
        field(j, "backToBack", Boolean.toString(config.backToBack())).append(',');
        field(j, "operations", Long.toString(check.acceptedWrites())).append(',');
        field(j, "sections", Long.toString(check.sections())).append(',');
        StringBuilder injected = new StringBuilder("{");
        StringBuilder recovery = new StringBuilder("{");
        for (Map.Entry<FaultKind, Recovery> e : recoveries().entrySet()) {
            Recovery r = e.getValue();
            if (r.count() == 0 && !config.faults().contains(e.getKey())) {
                continue;
            }
            if (injected.length() > 1) {
                injected.append(',');
                recovery.append(',');
            }
            field(injected, e.getKey().cliName(), Integer.toString(r.count()));
            field(
                    recovery,
                    e.getKey().cliName(),
                    "{\"recovered\":" + r.recovered() + ",\"inBound\":" + inBound(e.getKey()) + ",\"cutShort\":"
                            + r.cutShort() + ",\"p50\":" + r.p50() + ",\"max\":" + r.max() + ",\"boundMs\":"
                            + config.recoveryBound(e.getKey()).toMillis() + ",\"blockedP50\":" + r.blockedP50()
                            + ",\"blockedMax\":" + r.blockedMax()
                            + "}");
        }
        field(j, "faults", injected.append('}').toString()).append(',');
        field(j, "recoveryMs", recovery.append('}').toString()).append(',');
        field(j, "overlaps", Long.toString(check.overlaps())).append(',');
        field(j, "acceptedOverlaps", Long.toString(check.acceptedOverlaps())).append(',');
        field(j, "staleWritesRejected", Long.toString(check.staleWritesRejected()))
                .append(',');
        field(j, "staleReadsRejected", Long.toString(check.staleReadsRejected()))
                .append(',');
        field(j, "staleWritesAccepted", Long.toString(check.staleWritesAccepted()))
                .append(',');
        boolean defined = config.primitive() != Primitive.SEMAPHORE;
        field(j, "lostUpdates", defined ? Long.toString(check.lostUpdates()) : "null")
                .append(',');
        field(j, "shortfall", defined ? Long.toString(check.shortfall()) : "null")
                .append(',');
        OccupancyStore.Report occ = occupancy;
        if (occ != null) {
            field(
                            j,
                            "occupancy",
                            "{\"entries\":" + occ.entries() + ",\"violations\":" + occ.violations()
                                    + ",\"staleRefused\":" + occ.staleRefused() + ",\"fencedOut\":"
                                    + occ.fencedOut() + ",\"staleAccepted\":" + occ.staleAccepted()
                                    + ",\"maxReaders\":" + occ.maxReaders() + ",\"maxPermits\":"
                                    + occ.maxPermits() + ",\"misuses\":" + occ.misuses() + "}")
                    .append(',');
        }
        if (config.library() != Library.DLOCK) {
            field(j, "library", quote(config.library().cliName())).append(',');
        }
        if (config.checkValid()) {
            field(j, "checkValid", "true").append(',');
            field(j, "skippedWrites", Long.toString(skippedWrites)).append(',');
        }
        StringBuilder byFault = new StringBuilder("{");
        for (Map.Entry<String, Long> e : new java.util.TreeMap<>(staleByFault).entrySet()) {
            if (byFault.length() > 1) {
                byFault.append(',');
            }
            field(byFault, e.getKey(), Long.toString(e.getValue()));
        }
        field(j, "staleAcceptedByFault", byFault.append('}').toString()).append(',');
        field(j, "lockLostEvents", Long.toString(lockLost)).append(',');
        field(j, "refusedWhileValid", Long.toString(refusedWhileValid)).append(',');
        field(j, "timeouts", Long.toString(timeouts)).append(',');
        field(j, "errors", Long.toString(errors)).append(',');
        field(j, "leftovers", Integer.toString(leftovers.size())).append(',');
        field(j, "stuckWorkers", Integer.toString(stuck.size())).append(',');
        field(j, "passed", Boolean.toString(passed())).append(',');
        StringBuilder p = new StringBuilder("[");
        for (String problem : problems) {
            if (p.length() > 1) {
                p.append(',');
            }
            p.append(quote(problem));
        }
        field(j, "problems", p.append(']').toString());
        return j.append('}').toString();
    }

    private static StringBuilder field(StringBuilder j, String name, String rawValue) {
        return j.append(quote(name)).append(':').append(rawValue);
    }

    static String quote(String s) {
        StringBuilder q = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"' -> q.append("\\\"");
                case '\\' -> q.append("\\\\");
                case '\n' -> q.append("\\n");
                case '\r' -> q.append("\\r");
                case '\t' -> q.append("\\t");
                default -> {
                    if (c < 0x20) {
                        q.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        q.append(c);
                    }
                }
            }
        }
        return q.append('"').toString();
    }

    /** The checker's account of the first problem (which sections, tokens and clients), for the diagnosis. */
    private static String firstProblem(FencingChecker.Report check) {
        return check.firstProblem().isEmpty() ? "" : ": " + check.firstProblem();
    }
}
