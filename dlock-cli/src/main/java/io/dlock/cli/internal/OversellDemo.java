package io.dlock.cli.internal;

import io.dlock.LockClient;
import io.dlock.cli.internal.report.Timeline;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.EmbeddedZooKeeper;
import io.dlock.testkit.Timing;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The oversell scenario behind {@code dlock demo}: worker JVMs sell items from a {@link
 * StockServer}, four times over.
 *
 * <ol>
 *   <li>No lock: read-modify-write races lose updates, and more items are sold than exist.
 *   <li>dlock: each order runs under {@code client.lock("stock")} and writes with the lease's
 *       fencing token; exactly the stock is sold and the tokens strictly increase.
 *   <li>dlock, and the holder is killed with SIGKILL inside its critical section: ZooKeeper expires
 *       its session and the lock passes on after about the session timeout.
 *   <li>dlock, and the holder is frozen with SIGSTOP (a long GC pause) for longer than the session
 *       timeout: another worker takes the lock and sells; when the frozen worker wakes up and
 *       writes with its old token, the fenced stock rejects the write.
 * </ol>
 *
 * <p>The demo starts an {@link EmbeddedZooKeeper} and a stock server in this JVM and the workers
 * ({@link DemoWorker}) as child JVMs on this JVM's classpath, talks to them through their standard
 * input and output, and stops all of them before {@link #run()} returns, whatever happens.
 *
 * <p>Concurrency: one thread (the caller's) drives everything; the children report through {@link
 * ChildJvm}'s reader threads. Failure: a round that times out or whose workers fail becomes a
 * round result with problems, and the next round still runs.
 *
 * <p>Thread-safety: not thread-safe; run one instance from one thread.
 */
public final class OversellDemo {

    /** The name of the lock the workers take. */
    public static final String LOCK_NAME = "stock";

    /** How long an order takes to process, in ms: long enough for unlocked workers to race. */
    public static final String ORDER_MS = "5-10";

    private static final Logger LOG = LoggerFactory.getLogger(OversellDemo.class);
    private static final Duration POLL = Duration.ofMillis(2);
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration STEP_TIMEOUT = Duration.ofSeconds(20);
    private static final Duration FINISH_TIMEOUT = Duration.ofSeconds(30);
    private static final long KILLED_HOLD_MS = 60_000;
    private static final long PAUSED_HOLD_MS = 2_000;
    private static final Duration PAUSE_BEYOND_SESSION = Duration.ofSeconds(2);
    private static final long WORKER_MAX_RUNTIME_MS = 120_000;
    private static final int TAIL = 8;

    private final int stock;
    private final int workers;
    private final Duration sessionTimeout;
    private final PrintWriter out;
    /** The lock server given by the user ({@code --uri}), or null for the embedded ZooKeeper. */
    private final @Nullable String serverUri;
    /** What the narration calls the holder's liveness: a ZooKeeper session or a lease. */
    private final String liveness;

    private final List<Timeline> timelines = new ArrayList<>();

    /**
     * Prepares a demo; nothing starts until {@link #run()}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws, nothing started.
     *
     * @param stock the items in stock at the start of each round, at least 1
     * @param workers the worker JVMs per round, at least 2
     * @param sessionTimeout the workers' ZooKeeper session timeout, positive
     * @param out where the narration goes
     * @throws IllegalArgumentException if a number is out of range
     */
    public OversellDemo(int stock, int workers, Duration sessionTimeout, PrintWriter out) {
        this(stock, workers, sessionTimeout, out, null);
    }

    /**
     * Prepares a demo on a lock server of the user's instead of the embedded ZooKeeper; nothing
     * starts until {@link #run()}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws, nothing started.
     *
     * @param stock the items in stock at the start of each round, at least 1
     * @param workers the worker JVMs per round, at least 2
     * @param sessionTimeout how long a dead or frozen holder keeps the lock: the ZooKeeper session
     *     timeout, or the lease time on the other backends (added to {@code serverUri} unless it sets
     *     {@code sessionTimeout} or {@code leaseTime} itself)
     * @param out where the narration goes
     * @param serverUri a dlock URI ({@code jdbc:postgresql://…}, {@code redis://…}, …), or null for
     *     the embedded ZooKeeper
     * @throws IllegalArgumentException if a number is out of range or the URI is blank
     */
    public OversellDemo(int stock, int workers, Duration sessionTimeout, PrintWriter out, @Nullable String serverUri) {
        if (serverUri != null && serverUri.isBlank()) {
            throw new IllegalArgumentException("the lock server URI must not be blank");
        }
        this.serverUri = serverUri;
        this.liveness = serverUri == null || serverUri.startsWith("zookeeper:") ? "session" : "lease";
        if (stock < 1) {
            throw new IllegalArgumentException("stock must be >= 1, got " + stock);
        }
        if (workers < 2) {
            throw new IllegalArgumentException("workers must be >= 2, got " + workers);
        }
        if (sessionTimeout.isNegative() || sessionTimeout.isZero()) {
            throw new IllegalArgumentException("sessionTimeout must be positive, got " + sessionTimeout);
        }
        this.stock = stock;
        this.workers = workers;
        this.sessionTimeout = sessionTimeout;
        this.out = Objects.requireNonNull(out, "out");
    }

    /**
     * Plays the four rounds, narrating them to the output.
     *
     * <p>Blocking: until every round is over, about 15 s with the defaults (two session timeouts
     * plus the workers' JVM starts). Thread-safety: call from one thread. On failure: a round that
     * fails is reported as a result with problems and the others still run; every process and
     * server this demo started is stopped before this method returns or throws.
     *
     * @return the four rounds' results
     * @throws IllegalStateException if the embedded ZooKeeper cannot start or dlock cannot connect
     *     to it (for example, dlock-zookeeper is not on the classpath); no round has run
     */
    public List<RoundResult> run() {
        List<RoundResult> results = new ArrayList<>();
        if (serverUri != null) {
            String lockUri = withTimeout(serverUri);
            out.printf(
                    "dlock demo: %d worker JVMs sell %d items, four times.%n" + "Lock server %s, worker %s time %s.%n",
                    workers, stock, redact(serverUri), liveness, DurationConverter.toParameter(sessionTimeout));
            out.flush();
            preflight(lockUri, redact(serverUri));
            playRounds(lockUri, results);
            return results;
        }
        try (EmbeddedZooKeeper zooKeeper = EmbeddedZooKeeper.start()) {
            String lockUri =
                    zooKeeper.uri("dlock-demo") + "?sessionTimeout=" + DurationConverter.toParameter(sessionTimeout);
            out.printf(
                    "dlock demo: %d worker JVMs sell %d items, four times.%n"
                            + "ZooKeeper (embedded) at %s, worker session timeout %s.%n",
                    workers, stock, zooKeeper.connectString(), DurationConverter.toParameter(sessionTimeout));
            out.flush();
            preflight(lockUri, "the embedded ZooKeeper");
            playRounds(lockUri, results);
        }
        return results;
    }

    private void playRounds(String lockUri, List<RoundResult> results) {
        results.add(play(1, "no lock", null, this::noLock));
        results.add(play(2, "dlock", lockUri, this::withLock));
        results.add(play(3, "dlock + kill -9", lockUri, this::killHolder));
        results.add(play(4, "dlock + GC pause", lockUri, this::pauseHolder));
    }

    /** The user's URI with the demo's session or lease time, unless it sets one itself. */
    private String withTimeout(String uri) {
        String parameter = liveness.equals("session") ? "sessionTimeout" : "leaseTime";
        if (uri.contains(parameter + "=")) {
            return uri;
        }
        return uri + (uri.contains("?") ? "&" : "?") + parameter + "=" + DurationConverter.toParameter(sessionTimeout);
    }

    /**
     * The URI as the narration shows it: no user info, no password parameter.
     *
     * @param uri a lock server URI
     * @return the URI without secrets
     */
    public static String redact(String uri) {
        return uri.replaceAll("//[^/@?]*@", "//***@").replaceAll("(?i)(password=)[^&;]*", "$1***");
    }

    /**
     * Connects once from this JVM, which has the workers' classpath, so that a missing backend or an
     * unreachable server is one clear error instead of four failed rounds.
     */
    private static void preflight(String lockUri, String server) {
        try (LockClient client = LockClient.connect(lockUri)) {
            LOG.debug("preflight: connected to {} ({})", lockUri, client.capabilities());
        } catch (RuntimeException e) {
            throw new IllegalStateException("cannot connect to " + server + " with dlock: " + e.getMessage(), e);
        }
    }

    /** What one round does between starting its workers and their end. */
    @FunctionalInterface
    private interface Script {
        /** Plays the round; returns its summary note, adds failed expectations to round.problems. */
        String play(Round round);
    }

    /**
     * The timeline of each round played so far, for the report: one lane per worker, each sale a bar
     * (from its {@code GET} to its {@code PUT}), the kill and the pause as faults.
     *
     * <p>Blocking: never. Thread-safety: read after {@link #run()} returned, from its thread.
     *
     * @return the timelines, in round order
     */
    public List<Timeline> timelines() {
        return List.copyOf(timelines);
    }

    private void recordTimeline(int number, String mode, Round round) {
        long end = System.nanoTime();
        Timeline timeline = new Timeline("Round " + number + ": " + mode, round.startedAt, end);
        for (int i = 1; i <= workers; i++) {
            timeline.lane(workerName(i));
        }
        for (StockServer.Sale sale : round.stock.sales()) {
            Timeline.Outcome outcome =
                    switch (sale.outcome()) {
                        case ACCEPTED -> Timeline.Outcome.ACCEPTED;
                        case OVERWROTE -> Timeline.Outcome.OVERLAP;
                        case REJECTED -> Timeline.Outcome.REFUSED_STALE;
                    };
            timeline.section(sale.client(), sale.fromNanos(), sale.toNanos(), outcome);
        }
        for (FaultMark f : round.faults) {
            timeline.fault(f.lane(), f.fromNanos(), f.toNanos(), f.label(), f.recoveryFromNanos(), f.recoveryMillis());
        }
        for (FaultMark loss : round.losses) {
            timeline.loss(loss.lane(), loss.fromNanos(), loss.label());
        }
        timelines.add(timeline);
    }

    /** A fault (or, with no recovery, a lock loss) seen in a round, for its timeline. */
    private record FaultMark(
            String lane, long fromNanos, long toNanos, String label, long recoveryFromNanos, long recoveryMillis) {}

    private RoundResult play(int number, String mode, @Nullable String lockUri, Script script) {
        out.printf("%nRound %d of 4: %s%n", number, mode);
        out.flush();
        try (Round round = new Round(number, lockUri)) {
            String notes;
            boolean completed = false;
            try {
                notes = script.play(round);
                completed = true;
            } catch (RuntimeException e) {
                LOG.debug("round {} failed", number, e);
                round.problems.add("round " + number + " (" + mode + ") did not complete: " + e.getMessage());
                notes = "did not complete: " + firstLine(e.getMessage());
                out.println("  did not complete: " + firstLine(e.getMessage()));
            }
            StockServer.Snapshot snapshot = round.stock.snapshot();
            check(number, mode, round, snapshot, completed);
            recordTimeline(number, mode, round);
            out.flush();
            return new RoundResult(
                    number,
                    mode,
                    stock,
                    snapshot.sold(),
                    snapshot.oversold(),
                    snapshot.rejections().size(),
                    notes,
                    round.problems);
        }
    }

    private void check(int number, String mode, Round round, StockServer.Snapshot snapshot, boolean completed) {
        String name = "round " + number + " (" + mode + "): ";
        if (number > 1 && snapshot.oversold() > 0) {
            round.problems.add(name + snapshot.oversold() + " items oversold under the lock");
        }
        if (!completed) {
            return; // the failure is already recorded; counts of a cut-short round say nothing more
        }
        if (number == 1) {
            if (snapshot.oversold() == 0) {
                round.problems.add(name + "nothing was oversold without a lock (" + snapshot.sold() + " sold from "
                        + stock + "); the race did not show");
            }
            return;
        }
        if (snapshot.sold() != stock) {
            round.problems.add(name + "expected exactly " + stock + " sold, got " + snapshot.sold());
        }
        if (number == 4 && snapshot.rejections().isEmpty()) {
            round.problems.add(name + "the paused holder's stale write was not rejected");
        }
        if (number != 4 && !snapshot.rejections().isEmpty()) {
            round.problems.add(name + snapshot.rejections().size() + " writes rejected; expected none");
        }
    }

    // ---------------------------------------------------------------- round 1

    private String noLock(Round round) {
        out.printf(
                "  %d workers each: GET the stock, process the order (%s ms), PUT stock-1. No lock.%n",
                workers, ORDER_MS);
        round.startWorkers(0, 0);
        round.awaitReady();
        round.goAll();
        round.awaitFinished();
        StockServer.Snapshot s = round.stock.snapshot();
        out.printf("  %s: %d sold from a stock of %d.%n", soldByWorker(s), s.sold(), stock);
        out.printf(
                "  => %d oversold: concurrent read-modify-writes overwrote each other (lost updates).%n", s.oversold());
        return "lost updates: " + s.sold() + " sold from " + stock;
    }

    // ---------------------------------------------------------------- round 2

    private String withLock(Round round) {
        out.printf("  Each order runs under client.lock(\"%s\"); each PUT carries lease.fencingToken();%n", LOCK_NAME);
        out.println("  the stock rejects a PUT whose token is lower than the highest it has accepted.");
        round.startWorkers(0, 0);
        round.awaitReady();
        round.goAll();
        round.awaitFinished();
        StockServer.Snapshot s = round.stock.snapshot();
        out.printf("  %s: %d sold from a stock of %d.%n", soldByWorker(s), s.sold(), stock);
        List<Long> tokens = s.acceptedTokens();
        boolean increasing = s.tokensStrictlyIncreasing();
        String range = tokens.isEmpty() ? "none" : tokens.get(0) + " .. " + tokens.get(tokens.size() - 1);
        out.printf(
                "  Fencing tokens of the %d accepted writes %s (%s).%n",
                tokens.size(), increasing ? "strictly increased" : "did NOT strictly increase", range);
        out.printf("  => %d oversold.%n", s.oversold());
        if (!increasing) {
            round.problems.add("round 2 (dlock): fencing tokens did not strictly increase: " + tokens);
        }
        return "tokens strictly increased over " + tokens.size() + (tokens.size() == 1 ? " write (" : " writes (")
                + range + ")";
    }

    // ---------------------------------------------------------------- round 3

    private String killHolder(Round round) {
        int holdAt = Math.min(3, stock);
        Hold hold = round.startHeld(holdAt, KILLED_HOLD_MS);
        Worker holder = round.holder();
        List<Worker> others = round.others();
        out.printf(
                "  %s sold %d, then stalls inside its critical section holding token %d (read stock %d).%n",
                holder.name, holdAt - 1, hold.token, hold.stockRead);
        round.goAndQueue(others);
        round.requireNoneAcquired(others, holder);
        long killedAt = System.nanoTime();
        holder.jvm.kill();
        out.printf("  kill -9 %s (pid %d) while it holds the lock.%n", holder.name, holder.jvm.pid());
        out.flush();
        Found next = round.awaitAny(others, DemoWorker.ACQUIRED, passOnTimeout());
        Duration passOn = Duration.ofNanos(next.seenAt - killedAt);
        round.faults.add(
                new FaultMark(holder.name, killedAt, killedAt, "kill -9 " + holder.name, killedAt, passOn.toMillis()));
        long nextToken = Long.parseLong(field(next.line, 1));
        out.printf(
                "  %s acquired the lock (token %d) %s after the kill: %s%n  (%s %s, counted from its last" + " %s).%n",
                next.worker.name,
                nextToken,
                DurationConverter.toSeconds(passOn),
                liveness.equals("session")
                        ? "ZooKeeper expired the dead holder's session"
                        : "the dead holder's lease ran out on the server",
                liveness.equals("session") ? "timeout" : "lease time",
                DurationConverter.toParameter(sessionTimeout),
                liveness.equals("session") ? "heartbeat" : "renewal");
        if (nextToken <= hold.token) {
            round.problems.add(
                    "round 3: the next token " + nextToken + " is not above the killed holder's " + hold.token);
        }
        round.awaitFinished();
        StockServer.Snapshot s = round.stock.snapshot();
        out.printf(
                "  %s: %d sold in all; the killed worker's order (stock %d -> %d) was never written.%n",
                soldByWorker(s), s.sold(), hold.stockRead, hold.stockRead - 1);
        out.printf("  => %d oversold.%n", s.oversold());
        return "lock passed on " + DurationConverter.toSeconds(passOn) + " after kill -9 (" + liveness + " "
                + DurationConverter.toParameter(sessionTimeout) + ")";
    }

    // ---------------------------------------------------------------- round 4

    private String pauseHolder(Round round) {
        int holdAt = Math.min(3, stock);
        Hold hold = round.startHeld(holdAt, PAUSED_HOLD_MS);
        Worker holder = round.holder();
        List<Worker> others = round.others();
        holder.jvm.pause();
        long pausedAt = System.nanoTime();
        out.printf(
                "  %s sold %d, then stalls inside its critical section holding token %d (read stock %d).%n"
                        + "  SIGSTOP %s (pid %d): frozen like a long GC pause; its "
                        + (liveness.equals("session")
                                ? "ZooKeeper session stops heartbeating"
                                : "lease is no longer renewed")
                        + ".%n",
                holder.name,
                holdAt - 1,
                hold.token,
                hold.stockRead,
                holder.name,
                holder.jvm.pid());
        out.flush();
        round.goAll(others);
        Found next = round.awaitAny(others, DemoWorker.ACQUIRED, passOnTimeout());
        round.awaitAny(others, DemoWorker.SOLD, STEP_TIMEOUT);
        out.printf(
                "  %s acquired the lock (token %s) %s into the pause, once the frozen holder's " + liveness
                        + " had run out.%n",
                next.worker.name,
                field(next.line, 1),
                DurationConverter.toSeconds(Duration.ofNanos(next.seenAt - pausedAt)));
        out.flush();
        // Keep the holder frozen a while longer, as a long GC pause would, while the others sell on.
        long resumeAt = pausedAt + sessionTimeout.plus(PAUSE_BEYOND_SESSION).toNanos();
        sleep(Duration.ofNanos(Math.max(0, resumeAt - System.nanoTime())));
        StockServer.Snapshot duringPause = round.stock.snapshot();
        holder.jvm.resume();
        long resumedAt = System.nanoTime();
        Duration paused = Duration.ofNanos(resumedAt - pausedAt);
        round.faults.add(new FaultMark(
                holder.name,
                pausedAt,
                resumedAt,
                "SIGSTOP " + holder.name + " " + DurationConverter.toSeconds(paused),
                pausedAt,
                (next.seenAt - pausedAt) / 1_000_000));
        out.printf(
                "  While %s was frozen the others sold %d (stock now %d).%n",
                holder.name, duringPause.sold() - (holdAt - 1), duringPause.stock());
        out.printf(
                "  SIGCONT %s after %s: it wakes up and writes stock %d with its old token %d ...%n",
                holder.name, DurationConverter.toSeconds(paused), hold.stockRead - 1, hold.token);
        out.flush();
        String write = holder.await(
                line -> line.startsWith(DemoWorker.REJECTED) || line.startsWith(DemoWorker.SOLD), STEP_TIMEOUT);
        String valid = field(holder.await(line -> line.startsWith(DemoWorker.LEASE_VALID), STEP_TIMEOUT), 1);
        String notes;
        if (write.startsWith(DemoWorker.REJECTED)) {
            String highest = field(write, 2);
            out.printf("  ... REJECTED by the stock: token %d < highest accepted token %s.%n", hold.token, highest);
            round.stock.snapshot().rejections().stream()
                    .filter(rejection -> rejection.client().equals(holder.name))
                    .findFirst()
                    .ifPresent(rejection -> out.printf(
                            "  Without that check the stock would go from %d back to %d, and %d item%s would be"
                                    + " oversold.%n",
                            rejection.stock(),
                            rejection.newValue(),
                            hold.stockRead - rejection.stock(),
                            hold.stockRead - rejection.stock() == 1 ? "" : "s"));
            notes = "paused holder's write rejected: token " + hold.token + " < " + highest;
        } else {
            out.printf("  ... ACCEPTED: the stale write went through.%n");
            round.problems.add("round 4: the paused holder's write with token " + hold.token + " was accepted");
            notes = "paused holder's write ACCEPTED with token " + hold.token;
        }
        out.printf("  %s's lease at that moment: isValid() = %s.%n", holder.name, valid);
        if (valid.equals("false")) {
            round.losses.add(new FaultMark(
                    holder.name, resumedAt, resumedAt, "lease invalid after the pause (isValid() = false)", 0, -1));
        }
        notes += "; its isValid() = " + valid;
        round.awaitFinished();
        StockServer.Snapshot s = round.stock.snapshot();
        out.printf("  %s: %d sold in all.%n", soldByWorker(s), s.sold());
        out.printf(
                "  => %d oversold, %d stale write%s rejected.%n",
                s.oversold(), s.rejections().size(), s.rejections().size() == 1 ? "" : "s");
        return notes;
    }

    // ---------------------------------------------------------------- helpers

    private Duration passOnTimeout() {
        return Timing.scale(sessionTimeout.multipliedBy(3).plus(Duration.ofSeconds(15)));
    }

    private String soldByWorker(StockServer.Snapshot snapshot) {
        Map<String, Integer> byClient = snapshot.soldByClient();
        List<String> parts = new ArrayList<>();
        for (int i = 1; i <= workers; i++) {
            String name = workerName(i);
            parts.add(name + " sold " + byClient.getOrDefault(name, 0));
        }
        return String.join(", ", parts);
    }

    private static String workerName(int index) {
        return "worker-" + index;
    }

    private static String field(String line, int index) {
        String[] parts = line.trim().split("\\s+");
        if (index >= parts.length) {
            throw new IllegalStateException("malformed worker line '" + line + "'");
        }
        return parts[index];
    }

    private static String firstLine(@Nullable String text) {
        if (text == null) {
            return "";
        }
        int newline = text.indexOf('\n');
        return newline < 0 ? text : text.substring(0, newline);
    }

    /** A worker's announced hold: its token and the stock it read. */
    private record Hold(long token, int stockRead) {}

    /** A line found in some worker's output, and when it was seen. */
    private record Found(Worker worker, String line, long seenAt) {}

    /** One worker JVM and the demo's read position in its output. */
    private static final class Worker implements AutoCloseable {
        final String name;
        final ChildJvm jvm;
        private int cursor;

        Worker(String name, ChildJvm jvm) {
            this.name = name;
            this.jvm = jvm;
        }

        /** The next line after the cursor matching {@code match}, moving the cursor past it. */
        Optional<String> poll(Predicate<String> match) {
            List<String> lines = jvm.lines();
            for (int i = cursor; i < lines.size(); i++) {
                if (match.test(lines.get(i))) {
                    cursor = i + 1;
                    return Optional.of(lines.get(i));
                }
            }
            return Optional.empty();
        }

        String await(Predicate<String> match, Duration timeout) {
            long deadline = System.nanoTime() + Timing.scale(timeout).toNanos();
            while (true) {
                boolean alive = jvm.isAlive();
                Optional<String> line = poll(match);
                if (line.isPresent()) {
                    return line.get();
                }
                if (!alive) {
                    throw new IllegalStateException(name + " exited unexpectedly" + tail());
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException(name + ": timed out after " + timeout + tail());
                }
                sleep(POLL);
            }
        }

        boolean printed(String prefix) {
            return jvm.lines().stream().anyMatch(line -> line.startsWith(prefix));
        }

        String tail() {
            List<String> lines = jvm.lines();
            return lines.subList(Math.max(0, lines.size() - TAIL), lines.size()).stream()
                    .map(line -> "\n      | " + line)
                    .collect(
                            Collectors.joining("", "\n      last output of " + name + " (pid " + jvm.pid() + "):", ""));
        }

        @Override
        public void close() {
            try {
                jvm.close();
            } catch (RuntimeException e) {
                LOG.warn("{} (pid {}) could not be stopped", name, jvm.pid(), e);
            }
        }
    }

    /** One round's stock server and workers; closing stops all of them. */
    private final class Round implements AutoCloseable {
        final int number;
        final @Nullable String lockUri;
        final StockServer stock;
        final List<Worker> workers = new ArrayList<>();
        final List<String> problems = new ArrayList<>();
        final List<FaultMark> faults = new ArrayList<>();
        final List<FaultMark> losses = new ArrayList<>();
        final long startedAt = System.nanoTime();
        private @Nullable Worker victim;

        Round(int number, @Nullable String lockUri) {
            this.number = number;
            this.lockUri = lockUri;
            this.stock = StockServer.start(OversellDemo.this.stock, lockUri != null);
        }

        /** Starts the workers; worker-1 holds on order {@code holdAt} for {@code holdForMs} if holdAt > 0. */
        void startWorkers(int holdAt, long holdForMs) {
            for (int i = 1; i <= OversellDemo.this.workers; i++) {
                List<String> args = new ArrayList<>(List.of(
                        "--port", String.valueOf(stock.port()),
                        "--client", workerName(i),
                        "--order-ms", ORDER_MS,
                        "--max-runtime-ms", String.valueOf(WORKER_MAX_RUNTIME_MS)));
                if (lockUri != null) {
                    args.addAll(List.of("--lock-uri", lockUri, "--lock-name", LOCK_NAME));
                }
                if (i == 1 && holdAt > 0) {
                    args.addAll(
                            List.of("--hold-at", String.valueOf(holdAt), "--hold-for-ms", String.valueOf(holdForMs)));
                }
                ChildJvm jvm = ChildJvm.start(DemoWorker.class, args);
                workers.add(new Worker(workerName(i), jvm));
                LOG.debug("round {}: started {} as pid {}", number, workerName(i), jvm.pid());
            }
        }

        void awaitReady() {
            for (Worker worker : workers) {
                worker.await(line -> line.equals(DemoWorker.READY), READY_TIMEOUT);
            }
        }

        void goAll() {
            goAll(workers);
        }

        void goAll(List<Worker> some) {
            for (Worker worker : some) {
                worker.jvm.send(DemoWorker.GO);
            }
        }

        /** Lets {@code holder} run alone until it announces its hold, and returns the hold. */
        /** Starts the workers and lets worker-1 alone reach order {@code holdAt}, where it stalls holding the lock. */
        Hold startHeld(int holdAt, long holdForMs) {
            startWorkers(holdAt, holdForMs);
            awaitReady();
            return holdFirst(holder(), holdAt);
        }

        /** The worker that stalls inside its critical section (worker-1). */
        Worker holder() {
            return workers.get(0);
        }

        /** Every worker but the holder. */
        List<Worker> others() {
            return workers.subList(1, workers.size());
        }

        Hold holdFirst(Worker holder, int holdAt) {
            victim = holder;
            holder.jvm.send(DemoWorker.GO);
            String line = holder.await(l -> l.startsWith(DemoWorker.HOLDING), STEP_TIMEOUT);
            return new Hold(Long.parseLong(field(line, 1)), Integer.parseInt(field(line, 2)));
        }

        /** Starts {@code some} and waits until each has asked for the lock. */
        void goAndQueue(List<Worker> some) {
            goAll(some);
            for (Worker worker : some) {
                worker.await(line -> line.startsWith(DemoWorker.WAITING), STEP_TIMEOUT);
            }
            sleep(Duration.ofMillis(300)); // let their requests reach ZooKeeper and queue
        }

        void requireNoneAcquired(List<Worker> some, Worker holder) {
            for (Worker worker : some) {
                if (worker.printed(DemoWorker.ACQUIRED)) {
                    throw new IllegalStateException(
                            worker.name + " acquired the lock while " + holder.name + " held it" + worker.tail());
                }
            }
        }

        /** Waits for the first line starting with {@code prefix} from any of {@code some}. */
        Found awaitAny(List<Worker> some, String prefix, Duration timeout) {
            long deadline = System.nanoTime() + Timing.scale(timeout).toNanos();
            while (true) {
                boolean anyAlive = false;
                for (Worker worker : some) {
                    anyAlive |= worker.jvm.isAlive();
                    Optional<String> line = worker.poll(l -> l.startsWith(prefix));
                    if (line.isPresent()) {
                        return new Found(worker, line.get(), System.nanoTime());
                    }
                }
                if (!anyAlive || System.nanoTime() - deadline > 0) {
                    StringBuilder tails = new StringBuilder();
                    some.forEach(worker -> tails.append(worker.tail()));
                    throw new IllegalStateException((anyAlive ? "timed out after " + timeout : "all workers exited")
                            + " waiting for a worker to print " + prefix + tails);
                }
                sleep(POLL);
            }
        }

        /** Waits for every worker still alive to exit, and records the ones that failed. */
        void awaitFinished() {
            long deadline = System.nanoTime() + Timing.scale(FINISH_TIMEOUT).toNanos();
            for (Worker worker : workers) {
                if (worker == victim && !worker.jvm.isAlive()) {
                    continue; // killed on purpose
                }
                Duration left = Duration.ofNanos(Math.max(0, deadline - System.nanoTime()));
                int status = worker.jvm.waitFor(left);
                if (status != 0 || !worker.printed(DemoWorker.DONE)) {
                    problems.add("round " + number + ": " + worker.name + " failed (exit status " + status + ")"
                            + worker.tail());
                }
            }
        }

        @Override
        public void close() {
            for (Worker worker : workers) {
                worker.close();
            }
            stock.close();
        }
    }

    private static void sleep(Duration duration) {
        try {
            Thread.sleep(duration.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
