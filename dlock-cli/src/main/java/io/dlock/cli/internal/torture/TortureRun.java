package io.dlock.cli.internal.torture;

import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.FaultProxy;
import io.dlock.testkit.FencedStore;
import io.dlock.testkit.FencedStoreServer;
import io.dlock.testkit.FencingChecker;
import io.dlock.testkit.NetworkNamespace;
import io.dlock.testkit.OccupancyStore;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Random;
import java.util.UUID;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One {@code dlock torture} run: a backend target, a {@link FencedStore} served over TCP, worker
 * JVMs ({@link TortureWorker}) that each reach the server through their own {@link FaultProxy},
 * and a bounded random schedule of faults; afterwards the store's history is checked, leftovers are
 * looked for, and every fault's recovery time is judged against the session timeout plus margin.
 *
 * <p>Schedule: after a quiet gap of 1 to 2 s, one fault; the enabled kinds come round in rounds,
 * each round in a random order (so a short run still covers every kind); then the run waits until the lock is usable again (a write with a newer grant is accepted), at
 * most the recovery bound plus {@link #RECOVERY_OBSERVATION}, before the next. Faults aimed at a
 * holder first ask a worker to stay in its critical section ({@code HOLD}) and strike when it says
 * {@code HOLDING}. Every wait is bounded; no fault starts when the rest of the duration could not
 * hold it and its recovery. With {@code --back-to-back} no fault waits for the last one's recovery;
 * every recovery is read from the store's history after the schedule ({@link #judgeBackToBack}).
 *
 * <p>Concurrency: one thread (the caller's) drives everything; the children report through {@link
 * ChildJvm}'s reader threads and the store's connection threads. Failure: whatever happens, every
 * process, proxy and server the run started is stopped before {@link #run()} returns or throws.
 *
 * <p>Thread-safety: not thread-safe; run one instance once, from one thread.
 */
public final class TortureRun {

    /** The lock every worker takes. */
    public static final String LOCK_NAME = "torture";

    /** How long past the bound a recovery is still observed (to report how late it was). */
    static final Duration RECOVERY_OBSERVATION = Duration.ofSeconds(10);

    /**
     * Back to back, what each serving window cut short by the next restart adds to a restart's
     * bound: clients reconnect only on their next connection attempt (ZooKeeper's client sleeps up
     * to 1 s between attempts), so a short window may pass before any of them is back.
     */
    static final Duration RECONNECT_ALLOWANCE = Duration.ofSeconds(1);

    private static final Logger LOG = LoggerFactory.getLogger(TortureRun.class);
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration POLL = Duration.ofMillis(10);
    private static final long HOLD_MS = 300;
    private static final long QUIET_MIN_MS = 1_000;
    private static final long QUIET_MAX_MS = 2_000;
    private static final double FAULT_MIN = 0.25; // fault lengths, as multiples of the session timeout
    private static final double FAULT_MAX = 2.5;
    private static final List<String> WORKER_JVM_OPTIONS = List.of(
            "-Xmx96m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Xshare:auto",
            // Log lines with the wall clock, to line them up with the faults in a failed run's log.
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS");

    /**
     * A system property: the log level of {@code io.dlock} in the workers ({@code debug} shows every
     * state change), for diagnosing a failed run from the worker log it writes.
     */
    static final String WORKER_LOG_LEVEL = "dlock.torture.workerLogLevel";

    /**
     * A system property: {@code true} writes the worker log for a run that passed as well (a failed
     * run always writes it), to read what a passing run's workers did, e.g. its slowest recovery or
     * its failed operations.
     */
    static final String KEEP_WORKER_LOG = "dlock.torture.keepWorkerLog";

    /**
     * A system property: the log level of ZooKeeper in the servers a target starts in child JVMs
     * ({@code info} shows elections and session expiries; the ensemble target reads it) and of the
     * workers' ZooKeeper connection ({@code ClientCnxn}: which session on which server); the
     * servers' output is appended to the worker log.
     */
    static final String SERVER_LOG_LEVEL = "dlock.torture.serverLogLevel";

    private final TortureConfig config;
    private final PrintWriter out;
    private final Network network;
    private final TortureListener listener;
    /** What {@link #network} came to for this run: never AUTO once {@link #run()} has started. */
    private Network partitionBy = Network.PROXY;

    private final Random random;
    private final String namespace = "torture-" + UUID.randomUUID().toString().substring(0, 8);
    private final List<Worker> live = new ArrayList<>();
    private final List<Worker> everyone = new ArrayList<>();
    private final List<FaultRecord> faults = new ArrayList<>();
    private final List<Pending> pending = new ArrayList<>(); // back-to-back faults, judged at the end
    private final List<String> problems = new ArrayList<>();
    private BackendTarget target;
    private FencedStore store;
    private FencedStoreServer storeServer;
    /** Every store's server: one, or one per part of a multi-lock (the first is {@link #storeServer}). */
    private final List<FencedStoreServer> storeServers = new ArrayList<>();

    private @Nullable OccupancyStore occupancy;
    /** The workers' main class: {@link TortureWorker}, or an anchor library's (see {@link Library}). */
    private Class<?> workerClass = TortureWorker.class;

    private int nextWorker = 1;
    private long t0;

    /**
     * Prepares a run; nothing starts until {@link #run()}.
     *
     * @param config what to run
     * @param out where progress lines go (one per fault)
     */
    // target, store and storeServer are set at the start of run(), the only entry point, before
    // anything reads them; run() is called once.
    @SuppressWarnings("NullAway.Init")
    public TortureRun(TortureConfig config, PrintWriter out) {
        this(config, out, Network.PROXY);
    }

    /**
     * Prepares a run whose partitions are made the way {@code network} says.
     *
     * @param config what to run
     * @param out where progress lines go (one per fault)
     * @param network how {@code partition} cuts a worker off
     */
    @SuppressWarnings("NullAway.Init") // as above
    public TortureRun(TortureConfig config, PrintWriter out, Network network) {
        this(config, out, network, TortureListener.NONE);
    }

    /**
     * Prepares a run that also reports its phases, faults and recording to {@code listener}.
     *
     * @param config what to run
     * @param out where progress lines go (one per fault)
     * @param network how {@code partition} cuts a worker off
     * @param listener told of phases, the store, faults and the end (progress, report)
     */
    @SuppressWarnings("NullAway.Init") // as above
    public TortureRun(TortureConfig config, PrintWriter out, Network network, TortureListener listener) {
        this.config = Objects.requireNonNull(config, "config");
        this.out = Objects.requireNonNull(out, "out");
        this.network = Objects.requireNonNull(network, "network");
        this.listener = Objects.requireNonNull(listener, "listener");
        this.random = new Random(config.seed());
    }

    /**
     * A worker JVM and the proxy in front of its server connection; with {@link Network#IPTABLES}
     * also its namespace and the proxy through which it reaches the store.
     */
    private static final class Worker {
        final String name;
        final FaultProxy proxy;
        final ChildJvm jvm;
        final @Nullable NetworkNamespace netns;
        final List<FaultProxy> storeProxies;
        boolean killed;

        Worker(
                String name,
                FaultProxy proxy,
                ChildJvm jvm,
                @Nullable NetworkNamespace netns,
                List<FaultProxy> storeProxies) {
            this.name = name;
            this.proxy = proxy;
            this.jvm = jvm;
            this.netns = netns;
            this.storeProxies = List.copyOf(storeProxies);
        }

        /** Lets every packet pass again. */
        void heal() {
            proxy.pass();
            if (netns != null) {
                netns.pass();
            }
        }

        /** Closes the proxies and the namespace (the JVM is closed separately). */
        void closeNetwork() {
            TortureRun.closeNetwork(proxy, storeProxies, netns);
        }
    }

    private static void closeNetwork(
            FaultProxy proxy, List<FaultProxy> storeProxies, @Nullable NetworkNamespace netns) {
        proxy.close();
        storeProxies.forEach(FaultProxy::close);
        if (netns != null) {
            netns.close();
        }
    }

    /**
     * Settles {@link #partitionBy} from the requested {@link Network} and says how partitions are
     * made: iptables where asked for (or, with AUTO, where possible), else the proxy, with the
     * reason.
     */
    private String choosePartitions() {
        if (!config.faults().contains(FaultKind.PARTITION) || network == Network.PROXY) {
            partitionBy = Network.PROXY;
            return "the worker's fault proxy stops forwarding (--network proxy)";
        }
        String why = !target.canUseNetworkNamespaces()
                ? "its workers reach servers the proxy does not front"
                : NetworkNamespace.unavailable().orElse("");
        if (why.isEmpty()) {
            partitionBy = Network.IPTABLES;
            return "iptables DROP inside a network namespace per worker (the worker's TCP stack sees a silent peer)";
        }
        if (network == Network.IPTABLES) {
            throw new IllegalArgumentException("--network iptables is not available: " + why);
        }
        partitionBy = Network.PROXY;
        return "the worker's fault proxy stops forwarding (iptables not used: " + why + ")";
    }

    /**
     * Runs the torture and checks the outcome.
     *
     * <p>Blocking: for about the configured duration, plus the start of the server and workers,
     * the last recovery and the shutdown checks (about two session timeouts). Thread-safety: call
     * once, from one thread. On failure: every process and server this run started is stopped
     * before it returns or throws.
     *
     * @return the result, which says whether the run passed
     * @throws IllegalArgumentException if the URI is not supported
     * @throws IllegalStateException if the server or the workers cannot be started
     */
    public TortureResult run() {
        long started = System.nanoTime();
        try {
            listener.phase("starting");
            workerClass = workerClass();
            target = BackendTargets.open(config.uri());
            if (config.faults().contains(FaultKind.SERVER_RESTART) && !target.canRestartServer()) {
                throw new IllegalArgumentException("server-restart needs a server the torture starts (--uri embedded)");
            }
            if (config.faults().contains(FaultKind.PARTITION) && !target.canPartition()) {
                throw new IllegalArgumentException(
                        "partition is not available on " + target.description() + ": leave it out of --faults");
            }
            String partitions = choosePartitions();
            checkCapability();
            checkLibraryBackend();
            startStores();
            listener.store(store);
            out.printf(
                    "dlock torture: %s%s%s, %d workers, %s, %s, faults %s, seed %d%n",
                    config.library() == Library.DLOCK
                            ? ""
                            : config.library().cliName() + " workers (for comparison) on ",
                    primitiveDescription(),
                    target.description(),
                    config.workers(),
                    seconds(config.duration()),
                    config.fenced() ? "fenced" : "UNFENCED",
                    config.faults().isEmpty() ? "none" : names(),
                    config.seed());
            String expiry = target.backend().equals("zookeeper") ? "session timeout" : "lease time";
            out.printf(
                    "%s %s, recovery bound %s (%s + %s)%n",
                    expiry,
                    seconds(config.sessionTimeout()),
                    seconds(config.recoveryBound()),
                    expiry,
                    seconds(config.recoveryMargin()));
            if (config.faults().contains(FaultKind.PARTITION)) {
                out.printf("partitions: %s%n", partitions);
            }
            if (config.faults().contains(FaultKind.SERVER_RESTART)) {
                out.printf(
                        "server restarts: down %s to %s, then the lock must be granted again within %s of the"
                                + " server serving again (%s + %s; downtime + %s + %s from the kill)%s%n",
                        seconds(config.downtimeMin()),
                        seconds(config.downtimeMax()),
                        seconds(config.recoveryBound(FaultKind.SERVER_RESTART)),
                        expiry,
                        seconds(config.restartMargin()),
                        expiry,
                        seconds(config.restartMargin()),
                        config.backToBack() ? "; faults back to back" : "");
            }
            out.flush();
            for (int i = 0; i < config.workers(); i++) {
                startWorker();
            }
            for (Worker w : List.copyOf(live)) {
                awaitReady(w);
            }
            t0 = System.nanoTime();
            listener.phase("faults");
            schedule();
            judgeBackToBack();
            long faultPhase = System.nanoTime() - t0;
            listener.phase("checking");
            List<String> stuck = stopWorkers();
            List<String> leftovers = awaitNoLeftovers();
            List<FencingChecker.Report> checks = new ArrayList<>();
            for (FencedStoreServer s : storeServers) {
                checks.add(s.store().check());
            }
            FencingChecker.Report check = TortureResult.combine(checks);
            listener.finished(new TortureRecording(store, t0, t0 + faultPhase, List.copyOf(faults), everyoneLines()));
            OccupancyStore occ = occupancy;
            Map<String, Long> staleByFault = config.primitive() == Primitive.SEMAPHORE ? Map.of() : staleByFault();
            TortureResult result = TortureResult.of(
                            config,
                            target.backend(),
                            target.description(),
                            faults,
                            check,
                            everyoneLines(),
                            stuck,
                            leftovers,
                            problems,
                            Duration.ofNanos(faultPhase),
                            Duration.ofNanos(System.nanoTime() - started),
                            target.failoverMayGrantTwice(),
                            occ == null ? null : occ.report())
                    .withStaleByFault(staleByFault);
            if (writesWorkerLog(result.passed(), System.getProperty(KEEP_WORKER_LOG))) {
                writeWorkerLog(result).ifPresent(file -> {
                    out.printf("worker log (every worker's output, for the diagnosis): %s%n", file);
                    out.flush();
                });
            }
            return result;
        } finally {
            closeAll();
        }
    }

    /**
     * Attributes every accepted stale write (a token lower than one the store had accepted) to the
     * fault injected last before it ({@code none} before the first), over every store.
     */
    private Map<String, Long> staleByFault() {
        Map<String, Long> byKind = new java.util.LinkedHashMap<>();
        for (FencedStoreServer server : storeServers) {
            long highest = FencedStore.NO_TOKEN;
            for (FencedStore.Access a : server.store().accesses()) {
                if (!a.accepted()) {
                    continue;
                }
                if (a.kind() == FencedStore.Kind.WRITE && a.token() < highest) {
                    long at = (a.nanoTime() - t0) / 1_000_000;
                    String kind = "none";
                    for (FaultRecord f : faults) {
                        if (f.atMillis() <= at) {
                            kind = f.kind().cliName();
                        }
                    }
                    byKind.merge(kind, 1L, Long::sum);
                }
                highest = Math.max(highest, a.token());
            }
        }
        return byKind;
    }

    /**
     * A backend that lacks the primitive's capability, or an anchor library the run cannot use: a
     * usage error, not a failed run.
     */
    public static final class UnsupportedPrimitive extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        private final String option;

        UnsupportedPrimitive(String message) {
            this("--primitive", message);
        }

        UnsupportedPrimitive(String option, String message) {
            super(message);
            this.option = option;
        }

        /** The option the user should change. */
        public String option() {
            return option;
        }
    }

    /** Connects once, straight to the server, and refuses a primitive the backend cannot do. */
    private void checkCapability() {
        Primitive p = config.primitive();
        if (p == Primitive.EXCLUSIVE || p == Primitive.ELECTION) { // every backend has both
            return;
        }
        InetSocketAddress address = target.serverAddress();
        String uri =
                target.clientUri(address.getHostString() + ":" + address.getPort(), namespace, config.sessionTimeout());
        try (io.dlock.LockClient client = io.dlock.LockClient.connect(uri)) {
            if (!client.capabilities().contains(p.capability())) {
                throw new UnsupportedPrimitive(p.cliName() + " is not supported by " + target.backend()
                        + " (its capabilities " + client.capabilities() + " lack " + p.capability() + ")");
            }
        }
    }

    /**
     * Finds the main class of the workers of {@link TortureConfig#library()}; an anchor library's
     * must be on the classpath (dlock-benchmarks) and fit the target's backend.
     */
    private Class<?> workerClass() {
        Library lib = config.library();
        if (lib == Library.DLOCK) {
            return TortureWorker.class;
        }
        try {
            return Class.forName(lib.workerClass());
        } catch (ClassNotFoundException e) {
            throw new UnsupportedPrimitive(
                    "--library",
                    "--library " + lib.cliName() + " needs its workers ("
                            + lib.workerClass() + ") on the classpath: they are in dlock-benchmarks, which carries "
                            + lib.cliName() + "; run ./dlock torture --library " + lib.cliName()
                            + " (it then runs from dlock-benchmarks' jar)");
        }
    }

    /** An anchor library's workers run on a single server of their backend. */
    private void checkLibraryBackend() {
        Library lib = config.library();
        if (lib != Library.DLOCK
                && (!lib.backend().equals(target.backend())
                        || target instanceof ZooKeeperEnsembleTarget
                        || target instanceof RedisSentinelTarget)) {
            throw new UnsupportedPrimitive(
                    "--library",
                    "--library " + lib.cliName() + " runs on a single " + lib.backend() + " server, not on "
                            + target.description());
        }
    }

    /** The stores the primitive needs: see {@link Primitive} and {@link TortureWorker}. */
    private void startStores() {
        switch (config.primitive()) {
            case EXCLUSIVE, ELECTION -> store = config.fenced() ? FencedStore.fenced() : FencedStore.unfenced();
            case READ_WRITE -> {
                store = config.fenced() ? FencedStore.fenced() : FencedStore.unfenced();
                occupancy = config.fenced() ? OccupancyStore.fencedReadWrite() : OccupancyStore.readWrite();
            }
            case SEMAPHORE -> {
                // Holders write side by side: the value store is a journal of their sections, unfenced;
                // the occupancy store is the checker (and the fence).
                store = FencedStore.unfenced();
                occupancy = config.fenced()
                        ? OccupancyStore.fencedSemaphore(config.permits())
                        : OccupancyStore.semaphore(config.permits());
            }
            case MULTI -> store = config.fenced() ? FencedStore.fenced() : FencedStore.unfenced();
        }
        storeServer = FencedStoreServer.start(store, occupancy);
        storeServers.add(storeServer);
        for (int i = 1; i < lockNames().size(); i++) {
            storeServers.add(FencedStoreServer.start(config.fenced() ? FencedStore.fenced() : FencedStore.unfenced()));
        }
    }

    /** The lock names the workers take: one, or the multi-lock's parts. */
    private List<String> lockNames() {
        if (config.primitive() != Primitive.MULTI) {
            return List.of(LOCK_NAME);
        }
        List<String> names = new ArrayList<>();
        for (int i = 1; i <= config.parts(); i++) {
            names.add(LOCK_NAME + "-part-" + i);
        }
        return names;
    }

    private String primitiveDescription() {
        return switch (config.primitive()) {
            case EXCLUSIVE -> "";
            case READ_WRITE -> "read-write lock (" + config.readPercent() + "% reads) on ";
            case SEMAPHORE -> "semaphore (" + config.permits() + " permits, 1 per holder) on ";
            case MULTI -> "multi-lock over " + config.parts() + " names on ";
            case ELECTION -> "leader election (each worker a candidate, the leader writes) on ";
        };
    }

    // ---- the schedule

    private void schedule() {
        long deadline = t0 + config.duration().toNanos();
        List<FaultKind> kinds = new ArrayList<>(config.faults());
        kinds.sort(null);
        List<FaultKind> deck = new ArrayList<>();
        long longestFault = Math.max(millis(config.sessionTimeout()) * 3, millis(config.downtimeMax()) + 5_000);
        // Back to back, recoveries are judged after the schedule: no fault waits for one.
        long longestCycle = longestFault + (config.backToBack() ? 0 : millis(config.recoveryBound())) + QUIET_MAX_MS;
        while (true) {
            long quiet = QUIET_MIN_MS + (long) (random.nextDouble() * (QUIET_MAX_MS - QUIET_MIN_MS));
            long left = (deadline - System.nanoTime()) / 1_000_000;
            if (kinds.isEmpty() || faults.size() + pending.size() >= config.maxFaults() || left < longestCycle) {
                sleepMillis(Math.max(0, left));
                return;
            }
            sleepMillis(quiet);
            if (deck.isEmpty()) { // every kind once per round, in a random order: short runs cover them all
                deck.addAll(kinds);
                java.util.Collections.shuffle(deck, random);
            }
            inject(deck.remove(deck.size() - 1));
        }
    }

    private void inject(FaultKind kind) {
        long at = System.nanoTime();
        listener.faultInjected(kind);
        Injected done;
        try {
            done = switch (kind) {
                case PAUSE -> pause();
                case KILL -> kill();
                case SERVER_RESTART -> restartServer();
                case PARTITION -> partition();
            };
        } catch (RuntimeException e) {
            LOG.debug("fault {} failed", kind, e);
            problems.add("injecting " + kind.cliName() + " failed: " + e.getMessage());
            out.printf("%7s  %-15s failed: %s%n", seconds(Duration.ofNanos(at - t0)), kind.cliName(), e.getMessage());
            out.flush();
            return;
        }
        Pending fault = new Pending(kind, at, done);
        if (config.backToBack()) {
            pending.add(fault);
            out.printf(
                    "%7s  %-15s %-4s %s (recovery read from the history at the end)%n",
                    seconds(Duration.ofNanos(at - t0)), kind.cliName(), done.target(), done.detail());
            out.flush();
            return;
        }
        long recovery = awaitRecovery(done.clear(), bound(kind));
        long boundMillis = bound(kind);
        String note = "";
        if (kind == FaultKind.KILL && recovery > boundMillis) {
            // Late: may the servers have given the dead holder's session a new timeout meanwhile?
            long killedAt = done.clearedAt();
            long recoveredAt = killedAt + recovery * 1_000_000L;
            OptionalLong rearmed = target.sessionsRestartedAt();
            boundMillis = killBoundMillis(boundMillis, killedAt, rearmed, recoveredAt);
            if (boundMillis != bound(kind)) {
                note = " = " + seconds(config.recoveryBound(kind)) + " from a server's start as leader or follower "
                        + seconds(Duration.ofMillis(boundMillis - bound(kind)))
                        + " after the kill, which gave the dead holder's session a new timeout";
            }
        }
        record(fault, recovery, false, boundMillis, note);
    }

    /**
     * The recovery bound of a holder's kill when the servers may have given the dead holder's
     * session a new timeout after it ({@link BackendTarget#sessionsRestartedAt()}): a ZooKeeper
     * leader that takes over tracks every session it inherits afresh, and a follower that joins the
     * leader reports every session created while it was away as touched; either way the session
     * expires a session timeout after that moment at the earliest, so the bound is counted from it
     * instead of from the kill.
     *
     * <p>Such a moment counts if it came after the kill, no later than the unextended bound (until
     * then the session can still be alive to be renewed) and no later than the recovery (one after
     * it did not delay it).
     *
     * @param boundMillis the bound from the kill (session timeout + margin)
     * @param killedAt {@link System#nanoTime()} when the holder was dead
     * @param rearmedAt when the servers last may have restarted session timeouts, if known
     * @param recoveredAt when a newer grant's write was accepted
     * @return {@code boundMillis}, or that plus the time from the kill to that moment
     */
    static long killBoundMillis(long boundMillis, long killedAt, OptionalLong rearmedAt, long recoveredAt) {
        if (rearmedAt.isEmpty()) {
            return boundMillis;
        }
        long afterKill = rearmedAt.getAsLong() - killedAt;
        if (afterKill <= 0 || afterKill > boundMillis * 1_000_000L || rearmedAt.getAsLong() - recoveredAt > 0) {
            return boundMillis;
        }
        return boundMillis + (afterKill + 999_999) / 1_000_000; // whole ms, rounded up
    }

    /** A fault whose recovery is still to be judged. */
    private record Pending(FaultKind kind, long at, Injected done) {}

    private long bound(FaultKind kind) {
        return millis(config.recoveryBound(kind));
    }

    private void record(Pending fault, long recovery, boolean cutShort, long boundMillis, String boundNote) {
        Injected done = fault.done();
        FaultKind kind = fault.kind();
        long at = fault.at();
        long blocked = recovery < 0
                ? -1
                : config.primitive() == Primitive.ELECTION
                        ? longestGap(done.start(), done.clearedAt() + recovery * 1_000_000)
                        : firstNewerWrite(done.start());
        FaultRecord record = new FaultRecord(
                kind,
                done.target(),
                done.detail(),
                (at - t0) / 1_000_000,
                (done.clearedAt() - done.startedAt()) / 1_000_000,
                blocked,
                recovery,
                boundMillis,
                cutShort);
        faults.add(record);
        if (record.failed() && recovery < 0) {
            diagnose(kind.cliName() + " at " + seconds(Duration.ofNanos(at - t0)));
        }
        out.printf(
                "%7s  %-15s %-4s %-38s blocked %6s, recovered %s%s%n",
                seconds(Duration.ofNanos(at - t0)),
                kind.cliName(),
                done.target(),
                done.detail(),
                blocked < 0 ? "-" : seconds(Duration.ofMillis(blocked)),
                recovery < 0
                        ? "NOT within " + seconds(Duration.ofMillis(bound(kind)).plus(RECOVERY_OBSERVATION))
                        : "in " + seconds(Duration.ofMillis(recovery)),
                cutShort
                        ? "  (cut short by the next fault: not judged)"
                        : record.recoveredInTime()
                                ? boundNote.isEmpty()
                                        ? ""
                                        : " (bound " + seconds(Duration.ofMillis(boundMillis)) + boundNote + ")"
                                : "  <-- beyond the bound of " + seconds(Duration.ofMillis(boundMillis)) + boundNote);
        out.flush();
    }

    /**
     * Back-to-back faults: waits for the last one's recovery, then reads every fault's recovery
     * from the store's history. A server restart's recovery is the time the server was serving
     * while the lock was not granted again: from the restart until the first write by a newer
     * grant, less the downtime of every restart that began in between (so a chain of restarts
     * close together is judged by what it is, not by its last link). Any other fault that had not
     * recovered when the next one began, while its bound had not yet run out, is cut short:
     * reported, not judged.
     */
    private void judgeBackToBack() {
        if (pending.isEmpty()) {
            return;
        }
        Pending last = pending.get(pending.size() - 1);
        Injected l = last.done();
        awaitRecovery(l.clear(), bound(last.kind()));
        out.println("recoveries:");
        for (int i = 0; i < pending.size(); i++) {
            Pending p = pending.get(i);
            Injected d = p.done();
            long recoveredAt = 0;
            boolean recovered = false;
            Usable usable = new Usable(d.clear(), true);
            for (FencedStore.Access a : store.accesses(d.clear().accesses())) {
                if (usable.shows(a)) {
                    recoveredAt = a.nanoTime();
                    recovered = true;
                    break;
                }
            }
            long recovery = -1;
            boolean cutShort = false;
            int windowsCut = 0;
            if (recovered) {
                long serving = recoveredAt - d.clearedAt();
                if (p.kind() == FaultKind.SERVER_RESTART) {
                    for (int j = i + 1; j < pending.size(); j++) {
                        Injected next = pending.get(j).done();
                        if (pending.get(j).kind() != FaultKind.SERVER_RESTART) {
                            continue;
                        }
                        if (next.startedAt() - recoveredAt >= 0) {
                            break;
                        }
                        windowsCut++;
                        long downUntil = next.clearedAt() - recoveredAt < 0 ? next.clearedAt() : recoveredAt;
                        serving -= downUntil - next.startedAt();
                    }
                }
                recovery = Math.max(0, serving / 1_000_000);
            }
            if (p.kind() != FaultKind.SERVER_RESTART
                    && i + 1 < pending.size()
                    && (recovery < 0 || recovery > bound(p.kind()))) {
                long nextStart = pending.get(i + 1).done().startedAt();
                cutShort = nextStart - (d.clearedAt() + bound(p.kind()) * 1_000_000) < 0;
            }
            // A serving window that the next kill cut short may pass before any client is back: the
            // ZooKeeper client waits up to 1 s between connection attempts (Lettuce backs off too).
            long boundMillis = bound(p.kind()) + windowsCut * RECONNECT_ALLOWANCE.toMillis();
            String note = windowsCut == 0
                    ? ""
                    : " = " + seconds(config.recoveryBound(p.kind())) + " + " + windowsCut + " x "
                            + seconds(RECONNECT_ALLOWANCE) + " for the serving windows cut short by the next kill";
            record(p, recovery, cutShort, boundMillis, note);
        }
    }

    /** The store at one moment: an access from {@code accesses} on happened after it. */
    private record Mark(long nanoTime, int accesses, long highest) {}

    private Mark mark() {
        // Read the store first, then the clock: an access at or after `accesses` is not earlier.
        int accesses = store.accessCount();
        long highest = store.highestToken();
        return new Mark(System.nanoTime(), accesses, highest);
    }

    /** What an injection did: the store when the fault began and when it cleared. */
    private record Injected(String target, String detail, Mark start, Mark clear) {
        long startedAt() {
            return start.nanoTime();
        }

        long clearedAt() {
            return clear.nanoTime();
        }
    }

    private Injected cleared(String target, String detail, Mark start) {
        return new Injected(target, detail, start, mark());
    }

    private Injected pause() {
        Worker w = pickHolder(pick());
        boolean holding = holdAndWait(w);
        long pauseMs = faultLength();
        Mark start = mark();
        w.jvm.pause();
        try {
            sleepMillis(pauseMs);
        } finally {
            w.jvm.resume();
        }
        return cleared(
                w.name, "SIGSTOP " + seconds(Duration.ofMillis(pauseMs)) + (holding ? " while holding" : ""), start);
    }

    private Injected kill() {
        Worker w = pickHolder(pick());
        boolean holding = holdAndWait(w);
        Mark start = mark();
        w.jvm.kill();
        w.killed = true;
        live.remove(w);
        Injected done = cleared(w.name, "SIGKILL" + (holding ? " while holding" : "") + ", replaced", start);
        w.closeNetwork();
        Worker replacement = startWorker();
        awaitReady(replacement);
        return done;
    }

    private Injected restartServer() {
        // By default down for up to 1.5 session timeouts: some sessions survive the outage, some expire.
        long min = millis(config.downtimeMin());
        long downtime = min + Math.round((millis(config.downtimeMax()) - min) * random.nextDouble());
        Mark start = mark();
        target.restartServer(Duration.ofMillis(downtime));
        long took = System.nanoTime() - start.nanoTime();
        return cleared("srv", "SIGKILL, restart (down " + seconds(Duration.ofNanos(took)) + ")", start);
    }

    private Injected partition() {
        Worker w = pick();
        boolean aimAtHolder = random.nextBoolean();
        if (aimAtHolder) {
            w = pickHolder(w);
        }
        boolean holding = aimAtHolder && holdAndWait(w);
        FaultProxy.Direction direction =
                switch (random.nextInt(5)) {
                    case 0 -> FaultProxy.Direction.UPSTREAM;
                    case 1 -> FaultProxy.Direction.DOWNSTREAM;
                    default -> FaultProxy.Direction.BOTH;
                };
        long lengthMs = faultLength();
        Mark start = mark();
        NetworkNamespace netns = w.netns;
        if (netns != null) {
            netns.drop(
                    w.proxy.port(),
                    switch (direction) {
                        case UPSTREAM -> NetworkNamespace.Direction.OUTGOING;
                        case DOWNSTREAM -> NetworkNamespace.Direction.INCOMING;
                        case BOTH -> NetworkNamespace.Direction.BOTH;
                    });
        } else {
            w.proxy.blackhole(direction);
        }
        try {
            sleepMillis(lengthMs);
        } finally {
            w.heal();
        }
        String way =
                switch (direction) {
                    case UPSTREAM -> "requests";
                    case DOWNSTREAM -> "replies";
                    case BOTH -> "both ways";
                };
        return cleared(
                w.name,
                "drop " + way + " " + seconds(Duration.ofMillis(lengthMs)) + (holding ? " while holding" : ""),
                start);
    }

    private Worker pick() {
        return live.get(random.nextInt(live.size()));
    }

    /**
     * The worker a fault aimed at a holder strikes: any worker (each takes the lock in turn), or in
     * an election the leader, the live worker whose write the store accepted last (waiting for one
     * up to {@link #waitMs()}); {@code any} if none writes.
     */
    private Worker pickHolder(Worker any) {
        if (config.primitive() != Primitive.ELECTION) {
            return any;
        }
        long deadline = System.nanoTime() + waitMs() * 1_000_000;
        int from = Math.max(0, store.accessCount() - 64);
        while (System.nanoTime() - deadline < 0) {
            List<FencedStore.Access> recent = store.accesses(from);
            for (int i = recent.size() - 1; i >= 0; i--) {
                FencedStore.Access a = recent.get(i);
                if (a.accepted() && a.kind() == FencedStore.Kind.WRITE) {
                    for (Worker w : live) {
                        if (w.name.equals(a.client())) {
                            return w;
                        }
                    }
                    break;
                }
            }
            sleepMillis(POLL.toMillis());
        }
        return any;
    }

    private long faultLength() {
        double factor = FAULT_MIN + random.nextDouble() * (FAULT_MAX - FAULT_MIN);
        return Math.round(millis(config.sessionTimeout()) * factor);
    }

    /** Asks {@code w} to stay in its next critical section; true once it says it is there. */
    private boolean holdAndWait(Worker w) {
        int from = w.jvm.lines().size();
        w.jvm.send(TortureWorker.HOLD + " " + HOLD_MS);
        long deadline = System.nanoTime() + waitMs() * 1_000_000 + 2_000_000_000L;
        while (System.nanoTime() - deadline < 0) {
            List<String> lines = w.jvm.lines();
            for (int i = from; i < lines.size(); i++) {
                if (lines.get(i).startsWith(TortureWorker.HOLDING + " ")) {
                    return true;
                }
            }
            from = lines.size();
            sleepMillis(1);
        }
        w.jvm.send(TortureWorker.HOLD + " 0");
        return false;
    }

    /**
     * Recognises the first access after a {@link Mark} that shows the lock usable again. For a lock,
     * an accepted write by a grant newer than any the store had seen at the mark. For an election,
     * an accepted write of a cycle begun after the mark (its term's read came after it): the next
     * leader's, or the same leader's when its term outlived the fault, but never the held write of a
     * leader struck between its read and its write. Feed it the accesses from the mark on, in order;
     * with {@code timed}, those the store decided before the mark's clock reading are passed over.
     */
    private final class Usable {
        private final Mark since;
        private final boolean timed;
        private final java.util.Set<String> readSince = new java.util.HashSet<>();

        Usable(Mark since, boolean timed) {
            this.since = since;
            this.timed = timed;
        }

        boolean shows(FencedStore.Access a) {
            if (!a.accepted() || (timed && a.nanoTime() - since.nanoTime() < 0)) {
                return false;
            }
            if (config.primitive() != Primitive.ELECTION) {
                return a.kind() == FencedStore.Kind.WRITE && a.token() > since.highest();
            }
            String term = a.client() + " " + a.token();
            if (a.kind() == FencedStore.Kind.READ) {
                readSince.add(term);
                return false;
            }
            return readSince.contains(term);
        }
    }

    /**
     * Waits until the store shows the lock usable again after {@code cleared} ({@link Usable});
     * returns the time that took in ms, or -1 if it did not happen within the bound plus the
     * observation window.
     */
    private long awaitRecovery(Mark cleared, long boundMillis) {
        long limit = cleared.nanoTime()
                + Duration.ofMillis(boundMillis).plus(RECOVERY_OBSERVATION).toNanos();
        Usable usable = new Usable(cleared, true);
        int index = cleared.accesses();
        while (true) {
            for (FencedStore.Access a : store.accesses(index)) {
                index = (int) a.sequence() + 1;
                if (usable.shows(a)) {
                    return (a.nanoTime() - cleared.nanoTime()) / 1_000_000;
                }
            }
            if (System.nanoTime() - limit > 0) {
                return -1;
            }
            sleepMillis(POLL.toMillis());
        }
    }

    /**
     * Returns how long after {@code since} the store first showed the lock usable ({@link Usable}),
     * in ms, or -1 if it did not (yet): in an election, the time without a leader.
     */
    private long firstNewerWrite(Mark since) {
        Usable usable = new Usable(since, false);
        for (FencedStore.Access a : store.accesses(since.accesses())) {
            if (usable.shows(a)) {
                return Math.max(0, (a.nanoTime() - since.nanoTime()) / 1_000_000);
            }
        }
        return -1;
    }

    /**
     * An election's time without a leader through a fault: the longest stretch without an accepted
     * write from {@code since} until {@code until} (the recovery). After a kill or a pause of the
     * leader that is the time to the next leader's first write; a leader cut off, or one whose term
     * outlives a server's outage, keeps writing for a while after the fault began, so the time to the
     * first write would say nothing: the gap is where no leader acted.
     */
    private long longestGap(Mark since, long until) {
        long last = since.nanoTime();
        long longest = 0;
        for (FencedStore.Access a : store.accesses(since.accesses())) {
            if (a.nanoTime() - until > 0) {
                break;
            }
            if (a.accepted() && a.kind() == FencedStore.Kind.WRITE && a.nanoTime() - last > 0) {
                longest = Math.max(longest, a.nanoTime() - last);
                last = a.nanoTime();
            }
        }
        return Math.max(longest, until - last) / 1_000_000;
    }

    /**
     * Writes what is known about a lock that stopped moving to a file in the temporary directory
     * (the queue with its owners' pids, each live worker's last lines and thread dump), and notes
     * the file among the problems.
     */
    private void diagnose(String what) {
        StringBuilder text = new StringBuilder("dlock torture diagnosis: " + what + "\n\nqueue:\n");
        target.describeQueue(namespace).forEach(l -> text.append("  ").append(l).append('\n'));
        for (Worker w : live) {
            List<String> lines = w.jvm.lines();
            text.append("\nworker ")
                    .append(w.name)
                    .append(" pid ")
                    .append(w.jvm.pid())
                    .append(", last lines:\n");
            lines.subList(Math.max(0, lines.size() - 15), lines.size())
                    .forEach(l -> text.append("  ").append(l).append('\n'));
            text.append(threadDump(w.jvm.pid()));
        }
        try {
            java.nio.file.Path file = java.nio.file.Files.createTempFile("dlock-torture-diagnosis-", ".txt");
            java.nio.file.Files.writeString(file, text);
            problems.add("diagnosis of " + what + " written to " + file);
        } catch (java.io.IOException e) {
            LOG.warn("cannot write the diagnosis: {}", e.toString());
        }
    }

    private static String threadDump(long pid) {
        java.nio.file.Path jcmd = java.nio.file.Path.of(System.getProperty("java.home"), "bin", "jcmd");
        try {
            Process p = new ProcessBuilder(jcmd.toString(), Long.toString(pid), "Thread.print")
                    .redirectErrorStream(true)
                    .start();
            byte[] dump = p.getInputStream().readAllBytes(); // jcmd ends by itself within seconds
            p.waitFor(10, java.util.concurrent.TimeUnit.SECONDS);
            return new String(dump, java.nio.charset.StandardCharsets.UTF_8);
        } catch (java.io.IOException e) {
            return "(no thread dump: " + e + ")\n";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "(interrupted)\n";
        }
    }

    // ---- workers

    private long waitMs() {
        return Math.max(5_000, 2 * millis(config.sessionTimeout()) + 1_000);
    }

    private Worker startWorker() {
        String name = "w" + nextWorker++;
        NetworkNamespace netns = partitionBy == Network.IPTABLES ? NetworkNamespace.create() : null;
        FaultProxy proxy;
        List<FaultProxy> storeProxies = new ArrayList<>();
        try {
            proxy = netns == null
                    ? FaultProxy.start(target.serverAddress())
                    : FaultProxy.start(target.serverAddress(), netns.hostAddress());
            if (netns != null) {
                try {
                    for (FencedStoreServer s : storeServers) {
                        storeProxies.add(FaultProxy.start(
                                new InetSocketAddress(InetAddress.getLoopbackAddress(), s.port()),
                                netns.hostAddress()));
                    }
                } catch (RuntimeException e) {
                    proxy.close();
                    storeProxies.forEach(FaultProxy::close);
                    throw e;
                }
            }
        } catch (RuntimeException e) {
            if (netns != null) {
                netns.close();
            }
            throw e;
        }
        List<String> ports = new ArrayList<>();
        if (storeProxies.isEmpty()) {
            storeServers.forEach(s -> ports.add(Integer.toString(s.port())));
        } else {
            storeProxies.forEach(sp -> ports.add(Integer.toString(sp.port())));
        }
        long maxRuntime = config.duration().toMillis() + 10 * 60_000L; // a backstop far beyond the run
        List<String> args = List.of(
                "--uri", target.clientUri(proxy.connectString(), namespace, config.sessionTimeout()),
                "--client", name,
                "--store-host",
                        netns == null ? "127.0.0.1" : netns.hostAddress().getHostAddress(),
                "--store-port", String.join(",", ports),
                "--lock", String.join(",", lockNames()),
                "--wait-ms", Long.toString(waitMs()),
                "--work-ms", Long.toString(config.workMs()),
                "--max-runtime-ms", Long.toString(maxRuntime),
                "--primitive", config.primitive().cliName(),
                "--read-percent", Integer.toString(config.readPercent()),
                "--permits", Integer.toString(config.permits()),
                "--check-valid", Boolean.toString(config.checkValid()));
        ChildJvm jvm;
        try {
            jvm = ChildJvm.start(
                    workerClass, args, workerJvmOptions(), netns == null ? List.of() : netns.commandPrefix());
        } catch (RuntimeException e) {
            closeNetwork(proxy, storeProxies, netns);
            throw e;
        }
        Worker w = new Worker(name, proxy, jvm, netns, storeProxies);
        live.add(w);
        everyone.add(w);
        return w;
    }

    private static List<String> workerJvmOptions() {
        List<String> options = new ArrayList<>(WORKER_JVM_OPTIONS);
        String level = System.getProperty(WORKER_LOG_LEVEL);
        if (level != null && !level.isBlank()) {
            options.add("-Dorg.slf4j.simpleLogger.log.io.dlock=" + level.trim());
        }
        String server = System.getProperty(SERVER_LOG_LEVEL);
        if (server != null && !server.isBlank()) {
            options.add("-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper.ClientCnxn=" + server.trim());
        }
        return options;
    }

    /** Whether a run writes its worker log: when it failed, or when {@link #KEEP_WORKER_LOG} is true. */
    static boolean writesWorkerLog(boolean passed, @Nullable String keepProperty) {
        return !passed || (keepProperty != null && Boolean.parseBoolean(keepProperty.trim()));
    }

    /**
     * Writes every worker's output (its protocol lines and its log) and the faults to a file in the
     * temporary directory, for a run that failed (or any run with {@link #KEEP_WORKER_LOG}); returns
     * the file, or empty if it cannot be written.
     */
    private java.util.Optional<java.nio.file.Path> writeWorkerLog(TortureResult result) {
        StringBuilder text = new StringBuilder("dlock torture worker log; the fault phase began at ")
                .append(java.time.Instant.ofEpochMilli(
                        System.currentTimeMillis() - (System.nanoTime() - t0) / 1_000_000))
                .append(" (UTC)\n\nproblems:\n");
        result.problems().forEach(p -> text.append("  ").append(p).append('\n'));
        text.append("\nfaults (seconds since the fault phase began):\n");
        for (FaultRecord f : faults) {
            text.append("  ").append(f).append('\n');
        }
        for (Map.Entry<String, List<String>> e : everyoneLines().entrySet()) {
            text.append("\nworker ").append(e.getKey()).append(":\n");
            e.getValue().forEach(l -> text.append("  ").append(l).append('\n'));
        }
        for (Map.Entry<String, List<String>> e : target.serverLogs().entrySet()) {
            text.append("\nserver ").append(e.getKey()).append(":\n");
            e.getValue().stream()
                    .filter(l -> !l.contains("Processing srvr command")) // the torture's leader probes
                    .forEach(l -> text.append("  ").append(l).append('\n'));
        }
        try {
            java.nio.file.Path file = java.nio.file.Files.createTempFile("dlock-torture-workers-", ".log");
            java.nio.file.Files.writeString(file, text);
            return java.util.Optional.of(file);
        } catch (java.io.IOException e) {
            LOG.warn("cannot write the worker log: {}", e.toString());
            return java.util.Optional.empty();
        }
    }

    private void awaitReady(Worker w) {
        try {
            w.jvm.awaitLine(
                    line -> line.equals(TortureWorker.READY) || line.startsWith(TortureWorker.FATAL), READY_TIMEOUT);
        } catch (IllegalStateException e) {
            throw new IllegalStateException("worker " + w.name + " did not start: " + e.getMessage(), e);
        }
        List<String> lines = w.jvm.lines();
        if (lines.stream().noneMatch(TortureWorker.READY::equals)) {
            throw new IllegalStateException("worker " + w.name + " failed: " + String.join(" | ", lines));
        }
    }

    /** Sends STOP to every live worker and waits for DONE; returns the names of those that hung. */
    private List<String> stopWorkers() {
        for (Worker w : live) {
            w.heal();
            w.jvm.send(TortureWorker.STOP);
        }
        // A worker may be waiting for the lock (wait-ms) and then releasing (connect timeout, 10 s).
        Duration bound = Duration.ofMillis(waitMs() + 15_000);
        long deadline = System.nanoTime() + bound.toNanos();
        List<String> stuck = new ArrayList<>();
        for (Worker w : live) {
            try {
                w.jvm.waitFor(Duration.ofNanos(Math.max(0, deadline - System.nanoTime())));
            } catch (IllegalStateException e) {
                stuck.add(w.name);
                problems.add("worker " + w.name + " did not stop within " + seconds(bound) + " after STOP");
                diagnose("worker " + w.name + " stuck after STOP");
                w.jvm.kill();
            }
        }
        return stuck;
    }

    /** Polls the server until the run's namespace holds no queue entry, at most the recovery bound. */
    private List<String> awaitNoLeftovers() {
        long deadline = System.nanoTime() + config.recoveryBound().toNanos();
        List<String> left = target.leftovers(namespace);
        while (!left.isEmpty() && System.nanoTime() - deadline < 0) {
            sleepMillis(250);
            left = target.leftovers(namespace);
        }
        return left;
    }

    private Map<String, List<String>> everyoneLines() {
        Map<String, List<String>> lines = new java.util.LinkedHashMap<>();
        for (Worker w : everyone) {
            lines.put(w.name, w.jvm.lines());
        }
        return lines;
    }

    private void closeAll() {
        for (Worker w : everyone) {
            try {
                w.jvm.close();
            } catch (RuntimeException e) {
                LOG.warn("closing worker {} failed: {}", w.name, e.toString());
            }
            w.closeNetwork();
        }
        storeServers.forEach(FencedStoreServer::close);
        if (target != null) {
            target.close();
        }
    }

    // ---- helpers

    private String names() {
        Map<FaultKind, Boolean> sorted = new EnumMap<>(FaultKind.class);
        config.faults().forEach(k -> sorted.put(k, true));
        return String.join(",", sorted.keySet().stream().map(FaultKind::cliName).toList());
    }

    private static long millis(Duration d) {
        return d.toMillis();
    }

    static String seconds(Duration d) {
        return String.format(Locale.ROOT, "%.1fs", d.toMillis() / 1000.0);
    }

    private static void sleepMillis(long ms) {
        if (ms <= 0) {
            return;
        }
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
