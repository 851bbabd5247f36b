package io.dlock.benchmarks;

import com.sun.management.GcInfo;
import io.dlock.testkit.ChildJvm;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.lang.management.MemoryUsage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntFunction;
import org.jspecify.annotations.Nullable;

/**
 * The workloads of the side-by-side run. Every implementation runs on the same servers in the same
 * run; W1 to W3 interleave them (warm-up of each, then {@code rounds} x A, B, C ...) so that a
 * drift of the machine (another build, a GC of the server) spreads over all of them.
 *
 * <p>Thread-safety: one run at a time, driven from one thread.
 */
final class Workloads {
    /** JVM options of W3's workers: the C2 compiler, a small heap, a collector that fits 2 cores. */
    static final List<String> WORKER_JVM_OPTIONS = List.of("-Xmx256m", "-XX:+UseSerialGC");

    private static final Duration WORKER_START = Duration.ofSeconds(90);
    /** Interleaved warm-up passes before the measured rounds; each runs a share of the warm-up. */
    private static final int WARM_UP_PASSES = 2;

    private final RunConfig config;
    private final Servers servers;
    private final Map<Backend, Long> serverPids;
    private final Map<LockImpl, BenchClient> clients;
    private final PrintWriter log;

    Workloads(
            RunConfig config,
            Servers servers,
            Map<Backend, Long> serverPids,
            Map<LockImpl, BenchClient> clients,
            PrintWriter log) {
        this.config = config;
        this.servers = servers;
        this.serverPids = serverPids;
        this.clients = clients;
        this.log = log;
    }

    private BenchClient client(LockImpl impl) {
        return java.util.Objects.requireNonNull(clients.get(impl), () -> "no client open for " + impl.label());
    }

    private interface Period {
        /** One period of {@code impl}; {@code measured} is false for warm-up periods. */
        Measurement run(LockImpl impl, Duration length, boolean measured) throws InterruptedException;
    }

    /** Warm-up for each, then rounds of A, B, C ...; returns the merged measurement of each. */
    private List<Result> interleaved(String workload, List<LockImpl> impls, Period period) throws InterruptedException {
        // Two interleaved passes of half the warm-up each: with one pass, the first implementation
        // warmed up while the JVM was still cold and was measured while the compiler still worked
        // through what the others' warm-ups had queued (its rounds kept rising, the others' did not).
        warmUp(workload, impls, period);
        Map<LockImpl, List<Measurement>> parts = new EnumMap<>(LockImpl.class);
        for (int round = 1; round <= config.rounds(); round++) {
            for (LockImpl impl : inRoundOrder(impls, round)) {
                Measurement m = period.run(impl, config.duration(), true);
                log.printf(
                        Locale.ROOT,
                        "%s round %d %-17s %10.0f ops/s%n",
                        workload,
                        round,
                        impl.label(),
                        m.opsPerSecond());
                log.flush();
                parts.computeIfAbsent(impl, k -> new ArrayList<>()).add(m);
            }
        }
        List<Result> out = new ArrayList<>();
        for (LockImpl impl : impls) {
            List<Measurement> rounds = java.util.Objects.requireNonNull(parts.get(impl));
            Result r = Result.of(workload, impl, Measurement.merge(rounds));
            r.extra()
                    .put(
                            Report.OPS_ROUNDS,
                            rounds.stream().map(Measurement::opsPerSecond).toList());
            out.add(r);
        }
        return out;
    }

    /**
     * The order of the implementations in {@code round} (from 1): as given in odd rounds, reversed in
     * even ones. Whoever runs first in a round follows the log lines and the previous round's last
     * implementation, and a drift of the machine over a round favours one end of it; reversing every
     * other round cancels both to first order, where a fixed order charged them to the same
     * implementation every time (dlock's first W1 round was its slowest in every full run).
     */
    static List<LockImpl> inRoundOrder(List<LockImpl> impls, int round) {
        if (round % 2 == 1) {
            return impls;
        }
        List<LockImpl> reversed = new ArrayList<>(impls);
        java.util.Collections.reverse(reversed);
        return reversed;
    }

    /** {@link #WARM_UP_PASSES} interleaved passes over {@code impls}, each a share of the warm-up. */
    private void warmUp(String workload, List<LockImpl> impls, Period period) throws InterruptedException {
        Duration each = config.warmup(workload).dividedBy(WARM_UP_PASSES);
        for (int pass = 1; pass <= WARM_UP_PASSES; pass++) {
            for (LockImpl impl : impls) {
                log.printf("%s warm-up %d/%d %s (%s)%n", workload, pass, WARM_UP_PASSES, impl.label(), each);
                log.flush();
                period.run(impl, each, false);
            }
        }
    }

    private static long[] window(Duration length, long delayNanos) {
        long start = System.nanoTime() + delayNanos;
        return new long[] {start, start + length.toNanos()};
    }

    /**
     * Deletes the parent nodes of {@code names} that the ZooKeeper implementations among {@code
     * impls} left, so that the server's removal of empty containers (10,000 a minute) does not run
     * on through the next workloads ({@link ZooKeeperTidy}). Outside every timed phase.
     */
    private void tidyZooKeeper(String what, List<LockImpl> impls, int count, IntFunction<String> nameOf)
            throws InterruptedException {
        if (servers.zookeeper() == null || impls.stream().allMatch(i -> ZooKeeperTidy.prefix(i) == null)) {
            return;
        }
        List<String> names = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            names.add(nameOf.apply(i));
        }
        List<String> paths = ZooKeeperTidy.parents(impls, names);
        long t0 = System.nanoTime();
        ZooKeeperTidy.Outcome done = ZooKeeperTidy.deleteEmpty(servers.address(Backend.ZOOKEEPER), paths);
        log.printf(
                Locale.ROOT,
                "%s: deleted %d of %d lock parent paths on ZooKeeper in %.1f s (%d failed)%n",
                what,
                done.deleted(),
                paths.size(),
                (System.nanoTime() - t0) / 1e9,
                done.failed());
        log.flush();
    }

    private static String w5Name(int i) {
        return "w5-" + i;
    }

    /** W1: one thread, acquire+release cycles on one lock. */
    List<Result> w1(List<LockImpl> impls) throws InterruptedException {
        Map<LockImpl, BenchLock> locks = new EnumMap<>(LockImpl.class);
        for (LockImpl impl : impls) {
            locks.put(impl, client(impl).lock("w1"));
        }
        return interleaved("W1", impls, (impl, length, measured) -> {
            long[] w = window(length, 0);
            return Loops.uncontended(java.util.Objects.requireNonNull(locks.get(impl)), w[0], w[1]);
        });
    }

    /** W2: {@code w2Threads} threads of this JVM on one lock. */
    List<Result> w2(List<LockImpl> impls) throws InterruptedException {
        Map<LockImpl, BenchLock> locks = new EnumMap<>(LockImpl.class);
        for (LockImpl impl : impls) {
            locks.put(impl, client(impl).lock("w2"));
        }
        return interleaved("W2", impls, (impl, length, measured) -> {
            long[] w = window(length, 50_000_000L); // let every thread reach the start line
            return Loops.contended(
                    java.util.Objects.requireNonNull(locks.get(impl)),
                    config.w2Threads(),
                    w[0],
                    w[1],
                    "w2-" + impl.label());
        });
    }

    /** W3: {@code w3Jvms} worker JVMs of {@code w3Threads} threads each on one lock. */
    List<Result> w3(List<LockImpl> impls) throws InterruptedException {
        Path dir = tempDir("dlock-bench-w3-");
        List<ChildJvm> workers = new ArrayList<>();
        try {
            List<String> args = workerArgs(impls);
            for (int i = 0; i < config.w3Jvms(); i++) {
                workers.add(ChildJvm.start(BenchWorker.class, args, WORKER_JVM_OPTIONS));
            }
            for (ChildJvm worker : workers) {
                worker.awaitLine("READY", WORKER_START);
            }
            int[] runs = {0};
            Map<LockImpl, long[]> perJvm = new EnumMap<>(LockImpl.class);
            Map<LockImpl, LongList> crossJvm = new EnumMap<>(LockImpl.class);
            List<Result> results = interleaved("W3", impls, (impl, length, measured) -> {
                long[] w = window(length, 500_000_000L); // the commands reach every worker before the start
                List<Path> files = new ArrayList<>();
                for (ChildJvm worker : workers) {
                    Path file = dir.resolve("run-" + (runs[0]++) + ".bin");
                    files.add(file);
                    worker.send(String.format(
                            Locale.ROOT, "RUN %s w3 %d %d %d %s", impl.label(), config.w3Threads(), w[0], w[1], file));
                }
                List<Measurement> parts = new ArrayList<>();
                Duration timeout = length.plus(Duration.ofSeconds(90));
                for (int i = 0; i < workers.size(); i++) {
                    awaitDone(workers.get(i), "W3 worker " + i, timeout);
                    parts.add(readAndDelete(files.get(i)));
                }
                if (measured) {
                    long[] shares = perJvm.computeIfAbsent(impl, k -> new long[workers.size()]);
                    for (int i = 0; i < parts.size(); i++) {
                        shares[i] += parts.get(i).ops;
                    }
                    crossJvm.computeIfAbsent(impl, k -> new LongList(1 << 12)).addAll(crossJvmHandoffs(parts));
                }
                return Measurement.concurrent(parts);
            });
            for (Result r : results) {
                long[] shares = perJvm.get(r.impl());
                if (shares != null) {
                    r.extra()
                            .put(
                                    "perJvm",
                                    java.util.Arrays.stream(shares)
                                            .mapToObj(Long::toString)
                                            .collect(java.util.stream.Collectors.joining("/")));
                    r.extra().put("jainFairness", jain(shares));
                }
                LongList gaps = crossJvm.get(r.impl());
                if (gaps != null && gaps.size() > 0) {
                    long[] sorted = gaps.toArray();
                    java.util.Arrays.sort(sorted);
                    r.extra().put("crossJvmHandoffs", sorted.length);
                    r.extra().put("crossJvmHandoffP50us", sorted[sorted.length / 2] / 1_000.0);
                }
            }
            return results;
        } finally {
            stop(workers, dir);
        }
    }

    /**
     * SCALE (issue 21 item 6), the cost as work grows: for each count of worker JVMs in {@code
     * scaleJvms} and each count of lock names in {@code scaleNames}, every one of those JVMs runs
     * {@code scaleThreads} threads that pick a name at random per cycle (one name: W2 and W3's
     * contention; many: W5's spread). One result per cell and implementation, named {@code SCALE
     * j=<jvms> n=<names>}. Every name is taken once before its cells, so that what a backend keeps
     * per name exists. Floors that are not locks (ZooKeeper's create and delete) run only in cells
     * of more than one name, unchecked; everyone else's critical sections are checked, across the
     * JVMs where there is one name and per name within each JVM where there are more.
     */
    List<Result> scale(List<LockImpl> impls) throws InterruptedException {
        Path dir = tempDir("dlock-bench-scale-");
        List<ChildJvm> workers = new ArrayList<>();
        int most = config.scaleJvms().stream().mapToInt(Integer::intValue).max().orElseThrow();
        try {
            List<String> args = workerArgs(impls);
            for (int i = 0; i < most; i++) {
                workers.add(ChildJvm.start(BenchWorker.class, args, WORKER_JVM_OPTIONS));
            }
            for (ChildJvm worker : workers) {
                worker.awaitLine("READY", WORKER_START);
            }
            int[] runs = {0};
            List<Result> out = new ArrayList<>();
            for (int names : config.scaleNames()) {
                String prefix = "scale-" + names;
                List<LockImpl> here = impls.stream()
                        .filter(impl -> names > 1 || impl.contendable())
                        .toList();
                for (LockImpl impl : here) {
                    log.printf("SCALE %s: taking each of %d names once%n", impl.label(), names);
                    log.flush();
                    command(
                            workers.get(0),
                            "TOUCH " + impl.label() + " " + prefix + " " + names,
                            Duration.ofMinutes(11));
                }
                for (int jvms : config.scaleJvms()) {
                    List<ChildJvm> cell = workers.subList(0, jvms);
                    String workload = "SCALE j=" + jvms + " n=" + names;
                    out.addAll(interleaved(workload, here, (impl, length, measured) -> {
                        long[] w = window(length, 500_000_000L); // the commands reach every worker first
                        List<Path> files = new ArrayList<>();
                        for (ChildJvm worker : cell) {
                            Path file = dir.resolve("run-" + (runs[0]++) + ".bin");
                            files.add(file);
                            worker.send(String.format(
                                    Locale.ROOT,
                                    "SRUN %s %s %d %d %d %d %s",
                                    impl.label(),
                                    prefix,
                                    names,
                                    config.scaleThreads(),
                                    w[0],
                                    w[1],
                                    file));
                        }
                        List<Measurement> parts = new ArrayList<>();
                        for (int i = 0; i < cell.size(); i++) {
                            awaitDone(cell.get(i), workload + " worker " + i, length.plus(Duration.ofSeconds(90)));
                            parts.add(readAndDelete(files.get(i)));
                        }
                        Measurement m = Measurement.concurrent(parts);
                        return impl.role() == LockImpl.Role.FLOOR && !impl.contendable() ? m.withoutOverlapCheck() : m;
                    }));
                }
            }
            return out;
        } finally {
            stop(workers, dir);
        }
    }

    private static void command(ChildJvm worker, String line, Duration timeout) {
        worker.send(line);
        awaitDone(worker, line, timeout);
    }

    private static void awaitDone(ChildJvm worker, String what, Duration timeout) {
        String reply = worker.awaitLine(l -> l.startsWith("DONE ") || l.startsWith("FAILED "), timeout);
        if (reply.startsWith("FAILED")) {
            throw new IllegalStateException(what + ": " + reply);
        }
    }

    private static Measurement readAndDelete(Path file) {
        try {
            Measurement m = BenchWorker.read(file);
            Files.deleteIfExists(file);
            return m;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The arguments of a {@link BenchWorker} that opens {@code impls}. */
    private List<String> workerArgs(List<LockImpl> impls) {
        StringBuilder labels = new StringBuilder();
        for (LockImpl impl : impls) {
            labels.append(labels.length() == 0 ? "" : ",").append(impl.label());
        }
        return List.of(
                orDash(servers.zookeeper()),
                orDash(servers.redis()),
                labels.toString(),
                orDash(servers.memcached()),
                orDash(servers.postgresql()),
                orDash(servers.mariadb()),
                orDash(servers.etcd()));
    }

    private static Path tempDir(String prefix) {
        try {
            return Files.createTempDirectory(prefix);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void stop(List<ChildJvm> workers, Path dir) {
        for (ChildJvm worker : workers) {
            if (worker.isAlive()) {
                try {
                    worker.send("QUIT");
                    worker.waitFor(Duration.ofSeconds(20));
                } catch (RuntimeException e) {
                    // killed below
                }
            }
            worker.close();
        }
        try (var files = Files.list(dir)) {
            files.forEach(f -> f.toFile().delete());
        } catch (IOException e) {
            // left in the temp directory
        }
        dir.toFile().delete();
    }

    /**
     * W5: {@code w5Threads} threads of this JVM over {@code w5Names} lock names, a name chosen at
     * random for each cycle: little contention, many requests in flight on one connection. Every
     * name is taken once before the warm-up, so that what a backend makes per name exists. The
     * floors are not all locks (ZooKeeper's is a create and a delete), so their critical sections
     * are not checked; everyone else's are, per name.
     */
    List<Result> w5(List<LockImpl> impls) throws InterruptedException {
        Map<LockImpl, List<BenchLock>> locks = new EnumMap<>(LockImpl.class);
        for (LockImpl impl : impls) {
            List<BenchLock> names = new ArrayList<>(config.w5Names());
            for (int i = 0; i < config.w5Names(); i++) {
                names.add(client(impl).lock(w5Name(i)));
            }
            locks.put(impl, names);
            log.printf("W5 %s: taking each of %d names once%n", impl.label(), names.size());
            log.flush();
            Loops.touchAll(names, config.w5Threads(), "w5");
        }
        // Redis: the server's commands and input bytes over every period (warm-up included), per cycle.
        Map<LockImpl, Map<String, Long>> calls = new EnumMap<>(LockImpl.class);
        Map<LockImpl, long[]> bytesAndCycles = new EnumMap<>(LockImpl.class);
        @Nullable RedisClient redisClient = null;
        @Nullable StatefulRedisConnection<String, String> redis = null;
        try {
            if (servers.redis() != null && impls.stream().anyMatch(i -> i.backend() == Backend.REDIS)) {
                redisClient = RedisClient.create(RedisURI.create("redis://" + servers.address(Backend.REDIS)));
                redis = redisClient.connect();
            }
            io.lettuce.core.api.sync.@Nullable RedisCommands<String, String> probeSync =
                    redis == null ? null : redis.sync();
            List<Result> out = interleaved("W5", impls, (impl, length, measured) -> {
                long[] w = window(length, 50_000_000L);
                List<BenchLock> names = java.util.Objects.requireNonNull(locks.get(impl));
                io.lettuce.core.api.sync.@Nullable RedisCommands<String, String> probe =
                        impl.backend() == Backend.REDIS ? probeSync : null;
                Map<String, ServerStats.CommandStat> before =
                        probe != null ? ServerStats.redisCommandStats(probe) : Map.of();
                long bytes0 = probe != null ? ServerStats.redisNetInputBytes(probe) : 0;
                Measurement m =
                        Loops.spread(names, config.w5Threads(), w[0], w[1], "w5-" + impl.label(), Loops.PLATFORM);
                if (probe != null) {
                    long bytes = ServerStats.redisNetInputBytes(probe) - bytes0;
                    Map<String, Long> sum = calls.computeIfAbsent(impl, k -> new java.util.TreeMap<>());
                    ServerStats.commandDelta(before, ServerStats.redisCommandStats(probe))
                            .forEach((k, d) -> sum.merge(k, d.calls(), Long::sum));
                    long[] bc = bytesAndCycles.computeIfAbsent(impl, k -> new long[2]);
                    bc[0] += bytes;
                    bc[1] += m.ops;
                }
                return impl.role() == LockImpl.Role.FLOOR ? m.withoutOverlapCheck() : m;
            });
            for (Result r : out) {
                long[] bc = bytesAndCycles.get(r.impl());
                Map<String, Long> c = calls.get(r.impl());
                if (bc != null && c != null && bc[1] > 0) {
                    int n = (int) Math.min(Integer.MAX_VALUE, bc[1]);
                    r.extra().put("commandstats", perCycleText(c, n));
                    r.extra()
                            .put(
                                    "callsPerCycle",
                                    c.values().stream()
                                                    .mapToLong(Long::longValue)
                                                    .sum()
                                            / (double) bc[1]);
                    r.extra().put("netInBytesPerCycle", bc[0] / (double) bc[1]);
                }
            }
            tidyZooKeeper("W5", impls, config.w5Names(), Workloads::w5Name);
            return out;
        } finally {
            if (redis != null) {
                redis.close();
            }
            if (redisClient != null) {
                redisClient.shutdown();
            }
        }
    }

    /**
     * W6: {@code w6Threads} virtual threads in one worker JVM of JDK 21+ over {@code w6Locks}
     * locks, a lock chosen at random for each cycle: hand-offs per second and their wait, JFR's
     * pinned-thread events over the measured rounds (apart: those while a class loads, which the JVM
     * pins whoever asked, and the others with a dlock frame), and the heap per waiting virtual thread
     * (every lock held, the other threads queued behind them). Each implementation has names of its
     * own, so that one that failed (an anchor is left out and the run goes on) leaves nothing in the
     * others' way.
     */
    List<Result> w6(List<LockImpl> impls) throws InterruptedException {
        Path dir = tempDir("dlock-bench-w6-");
        List<ChildJvm> workers = new ArrayList<>();
        try {
            ChildJvm worker = ChildJvm.startOn(
                    config.w6Java(), BenchWorker.class, workerArgs(impls), List.of("-Xmx1g", "-XX:+UseSerialGC"));
            workers.add(worker);
            worker.awaitLine("READY", WORKER_START);
            Map<LockImpl, long[]> pins = new EnumMap<>(LockImpl.class);
            Map<LockImpl, String> failed = new EnumMap<>(LockImpl.class);
            int[] runs = {0};
            Set<String> measuredStacks = new LinkedHashSet<>();
            Set<String> warmUpStacks = new LinkedHashSet<>();
            List<Result> results = interleaved("W6", impls, (impl, length, measured) -> {
                // Warm-up periods' pins (first calls that link call sites and load classes) are left out.
                if (failed.containsKey(impl)) {
                    return new Measurement(0, length.toNanos(), new long[0], new long[0], new long[0], 0);
                }
                // Thousands of threads to start after the command arrives: a second's head start.
                long[] w = window(length, 1_000_000_000L);
                Path file = dir.resolve("run-" + (runs[0]++) + ".bin");
                String[] done;
                int linesBefore = worker.lines().size();
                try {
                    done = w6Command(
                            worker,
                            String.format(
                                    Locale.ROOT,
                                    "VRUN %s w6-%s %d %d %d %d %s",
                                    impl.label(),
                                    impl.label(),
                                    config.w6Locks(),
                                    config.w6Threads(),
                                    w[0],
                                    w[1],
                                    file),
                            length.plus(Duration.ofSeconds(90)));
                } catch (IllegalStateException e) {
                    if (impl.role() == LockImpl.Role.DLOCK) {
                        throw e;
                    }
                    // An anchor that cannot take this load is a finding, not a reason to lose the run.
                    log.printf("W6 %s failed and is left out: %s%n", impl.label(), e.getMessage());
                    failed.put(impl, String.valueOf(e.getMessage()));
                    return new Measurement(0, length.toNanos(), new long[0], new long[0], new long[0], 0);
                }
                if (measured) {
                    addPins(pins, impl, done);
                }
                List<String> lines = worker.lines();
                lines.subList(linesBefore, lines.size()).stream()
                        .filter(l -> l.startsWith("PINNED-BY-DLOCK "))
                        .forEach((measured ? measuredStacks : warmUpStacks)::add);
                return readAndDelete(file);
            });
            for (Result r : results) {
                String failure = failed.get(r.impl());
                if (failure != null) {
                    r.extra().put("failed", failure);
                    continue;
                }
                log.printf(
                        "W6 %s: heap per waiting virtual thread, in a JVM of its own%n",
                        r.impl().label());
                log.flush();
                // A fresh JVM: in the one that ran the rounds, the heap kept shrinking for a while
                // after them, which no before-and-after difference can tell from the waiters' share.
                ChildJvm fresh = ChildJvm.startOn(
                        config.w6Java(),
                        BenchWorker.class,
                        workerArgs(List.of(r.impl())),
                        List.of("-Xmx1g", "-XX:+UseSerialGC"));
                workers.add(fresh);
                fresh.awaitLine("READY", WORKER_START);
                String[] done = w6Command(
                        fresh,
                        String.format(
                                Locale.ROOT,
                                "VHEAP %s w6-%s %d %d",
                                r.impl().label(),
                                r.impl().label(),
                                config.w6Locks(),
                                config.w6Threads()),
                        Duration.ofMinutes(10));
                fresh.send("QUIT");
                fresh.waitFor(Duration.ofSeconds(20));
                long[] p = pins.getOrDefault(r.impl(), new long[3]);
                r.extra().put("heapPerWaitingThread", Math.round(Double.parseDouble(done[2])));
                r.extra().put("pinned", p[0]);
                r.extra().put("pinnedLoadingClasses", p[1]);
                r.extra().put("pinnedByDlock", p[2]);
            }
            // Only the measured rounds' pins are counted; the warm-up's are printed apart, so that a
            // stack from a first call (a call site or class linked by a virtual thread) is not read
            // as one of the counted pins.
            measuredStacks.stream().limit(10).forEach(log::println);
            if (!warmUpStacks.isEmpty()) {
                log.println("W6 pins with a dlock frame in the warm-up periods (not counted):");
                warmUpStacks.stream().limit(10).map(l -> "  warm-up " + l).forEach(log::println);
            }
            return results;
        } finally {
            stop(workers, dir);
        }
    }

    private static String[] w6Command(ChildJvm worker, String command, Duration timeout) {
        worker.send(command);
        String line = worker.awaitLine(l -> l.startsWith("DONE ") || l.startsWith("FAILED "), timeout);
        if (line.startsWith("FAILED")) {
            throw new IllegalStateException("W6 worker: " + line);
        }
        return line.split(" ");
    }

    private static void addPins(Map<LockImpl, long[]> pins, LockImpl impl, String[] done) {
        long[] p = pins.computeIfAbsent(impl, k -> new long[3]);
        for (int i = 0; i < p.length; i++) {
            p[i] += Long.parseLong(done[3 + i]);
        }
    }

    /**
     * Per round, the microseconds Redis spent in the commands the client sent itself per cycle: each
     * command's time weighted by its {@code share} of calls counted on their own ({@link
     * #ownShares}). A script's time includes that of the commands it ran, and {@code EXEC}'s that of
     * the commands it ran; those are not added again.
     */
    static List<Double> commandUsPerCycle(
            List<Map<String, ServerStats.CommandStat>> rounds, Map<String, Double> shares, int n) {
        List<Double> out = new ArrayList<>();
        for (Map<String, ServerStats.CommandStat> round : rounds) {
            double usec = 0;
            for (Map.Entry<String, Double> share : shares.entrySet()) {
                ServerStats.CommandStat stat = round.get(share.getKey());
                usec += stat == null ? 0 : stat.usec() * share.getValue();
            }
            out.add(usec / n);
        }
        return out;
    }

    /**
     * For each command the client sent ({@code requests}), the share of its calls whose time no
     * other command's includes: 1 but for those {@code EXEC} ran ({@code inTransactions}).
     */
    static Map<String, Double> ownShares(Map<String, Long> requests, Map<String, Long> inTransactions) {
        Map<String, Double> out = new java.util.TreeMap<>();
        requests.forEach(
                (command, calls) -> out.put(command, 1 - inTransactions.getOrDefault(command, 0L) / (double) calls));
        return out;
    }

    /** "evalsha:20.41 get:0.62 ...": microseconds per call of each command, over all {@code rounds}. */
    static String usecPerCallText(List<Map<String, ServerStats.CommandStat>> rounds) {
        Map<String, ServerStats.CommandStat> total = new java.util.TreeMap<>();
        for (Map<String, ServerStats.CommandStat> round : rounds) {
            round.forEach((command, stat) -> total.merge(command, stat, ServerStats.CommandStat::plus));
        }
        StringBuilder sb = new StringBuilder();
        total.forEach((command, stat) -> sb.append(sb.length() == 0 ? "" : " ")
                .append(command)
                .append(':')
                .append(String.format(Locale.ROOT, "%.2f", stat.usec() / (double) stat.calls())));
        return sb.toString();
    }

    private static String perCycleText(Map<String, Long> counts, int n) {
        StringBuilder sb = new StringBuilder();
        counts.forEach((k, v) -> sb.append(sb.length() == 0 ? "" : " ")
                .append(k)
                .append(':')
                .append(String.format(Locale.ROOT, "%.2f", v / (double) n)));
        return sb.toString();
    }

    /** The median of {@code values} (the mean of the middle two of an even count); NaN if any is NaN. */
    static double median(List<Double> values) {
        double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        if (v.length == 0 || Double.isNaN(v[v.length - 1])) {
            return Double.NaN;
        }
        int mid = v.length / 2;
        return v.length % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
    }

    /**
     * CPU time (user + system) of this JVM's JIT compiler threads, from {@code /proc/self/task}
     * (Linux), or -1 if unknown; resolution is the kernel's tick. COST reports the client's CPU with
     * and without it: compiling is a warm-up cost, and a pass after a warm-up of seconds still
     * caught the compiler at the hot path (the runner's own loop is interpreted until its
     * on-stack replacement, after tens of thousands of cycles).
     */
    static long compilerCpuNanos() {
        long ticks = 0;
        try (java.nio.file.DirectoryStream<Path> tasks = Files.newDirectoryStream(Path.of("/proc/self/task"))) {
            for (Path task : tasks) {
                String stat;
                try {
                    stat = Files.readString(task.resolve("stat"));
                } catch (IOException e) {
                    continue; // the thread ended meanwhile
                }
                // "tid (name) state ...": the name may hold spaces, so fields count from its ')'.
                int close = stat.lastIndexOf(')');
                String name = stat.substring(stat.indexOf('(') + 1, close);
                if (name.startsWith("C1 CompilerThre") || name.startsWith("C2 CompilerThre")) {
                    String[] f = stat.substring(close + 2).split(" ");
                    ticks += Long.parseLong(f[11]) + Long.parseLong(f[12]); // utime, stime
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return ticks * 10_000_000L; // USER_HZ is 100 on Linux (sysconf(_SC_CLK_TCK))
    }

    /** CPU time of a process (user + system), or -1 if unknown; resolution is the kernel's tick. */
    static long cpuNanos(long pid) {
        if (pid < 0) {
            return -1;
        }
        return ProcessHandle.of(pid)
                .flatMap(h -> h.info().totalCpuDuration())
                .map(Duration::toNanos)
                .orElse(-1L);
    }

    /**
     * The cross-JVM hand-offs of one period: for each critical section entered by another worker
     * JVM than the one before it, the time from the previous section's end (its holder's exit stamp,
     * just before its release) to this section's start. Stamps are {@code System.nanoTime()},
     * comparable across processes on Linux.
     */
    static long[] crossJvmHandoffs(List<Measurement> parts) {
        int n = 0;
        for (Measurement m : parts) {
            n += m.enters.length;
        }
        long[][] sections = new long[n][];
        int k = 0;
        for (int jvm = 0; jvm < parts.size(); jvm++) {
            Measurement m = parts.get(jvm);
            for (int i = 0; i < m.enters.length; i++) {
                sections[k++] = new long[] {m.enters[i], m.exits[i], jvm};
            }
        }
        java.util.Arrays.sort(sections, (a, b) -> Long.compare(a[0], b[0]));
        LongList out = new LongList(Math.max(16, n));
        for (int i = 1; i < n; i++) {
            if (sections[i][2] != sections[i - 1][2]) {
                out.add(Math.max(0, sections[i][0] - sections[i - 1][1]));
            }
        }
        return out.toArray();
    }

    /** Jain's fairness index of the workers' hand-offs: 1 when equal, 1/n when one JVM got all. */
    static double jain(long[] shares) {
        double sum = 0;
        double squares = 0;
        for (long s : shares) {
            sum += s;
            squares += (double) s * s;
        }
        return squares == 0 ? Double.NaN : sum * sum / (shares.length * squares);
    }

    private static String orDash(@Nullable String s) {
        return s == null ? "-" : s;
    }

    /**
     * W4: one client holds {@code w4Locks} distinct locks at once (acquired by {@code w4Threads}
     * threads, each its share, since the locks are thread-owned), then releases them. Heap per
     * held lock is the used heap after a full GC with all held, minus before, over the count.
     */
    List<Result> w4(List<LockImpl> impls) throws InterruptedException {
        List<Result> out = new ArrayList<>();
        for (LockImpl impl : impls) {
            out.add(w4(impl));
        }
        return out;
    }

    private Result w4(LockImpl impl) throws InterruptedException {
        BenchClient client = client(impl);
        int n = config.w4Locks();
        int threads = config.w4Threads();
        BenchLock.Held[] held = new BenchLock.Held[n];
        CountDownLatch acquired = new CountDownLatch(threads);
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch released = new CountDownLatch(threads);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        String run = Long.toString(System.nanoTime(), 36);
        IntFunction<String> w4Name = i -> "w4-" + run + "-" + i;
        log.printf("W4 %s: %d locks by %d threads%n", impl.label(), n, threads);
        log.flush();
        long heapBefore = usedHeapAfterGc();
        long t0 = System.nanoTime();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int from = (int) ((long) n * t / threads);
            int to = (int) ((long) n * (t + 1) / threads);
            Thread worker = new Thread(
                    () -> {
                        try {
                            try {
                                for (int i = from; i < to; i++) {
                                    held[i] = client.lock(w4Name.apply(i)).acquire();
                                }
                            } finally {
                                acquired.countDown();
                            }
                            release.await();
                            for (int i = from; i < to; i++) {
                                if (held[i] != null) {
                                    held[i].release();
                                    held[i] = null;
                                }
                            }
                        } catch (Throwable e) {
                            failure.compareAndSet(null, e);
                        } finally {
                            released.countDown();
                        }
                    },
                    "bench-w4-" + t);
            worker.setDaemon(true);
            workers.add(worker);
            worker.start();
        }
        acquired.await();
        long t1 = System.nanoTime();
        long heapHeld = usedHeapAfterGc();
        histogram(impl);
        long t2 = System.nanoTime();
        release.countDown();
        boolean done = released.await(10, TimeUnit.MINUTES);
        long t3 = System.nanoTime();
        if (!done) {
            throw new IllegalStateException("W4 " + impl.label() + ": release did not finish in 10 minutes");
        }
        if (failure.get() != null) {
            throw new IllegalStateException("W4 " + impl.label() + " failed: " + failure.get(), failure.get());
        }
        double acquireSeconds = (t1 - t0) / 1e9;
        double releaseSeconds = (t3 - t2) / 1e9;
        double bytesPerLock = (heapHeld - heapBefore) / (double) n;
        Map<String, Object> extra = new LinkedHashMap<>();
        extra.put("locks", n);
        extra.put("acquireSeconds", acquireSeconds);
        extra.put("releaseSeconds", releaseSeconds);
        extra.put("heapBytesPerLock", bytesPerLock);
        log.printf(
                Locale.ROOT,
                "W4 %s: acquired in %.1f s, released in %.1f s, %.0f heap bytes per held lock%n",
                impl.label(),
                acquireSeconds,
                releaseSeconds,
                bytesPerLock);
        log.flush();
        tidyZooKeeper("W4 " + impl.label(), List.of(impl), n, w4Name);
        return new Result(
                "W4",
                impl,
                n / (acquireSeconds + releaseSeconds),
                n,
                acquireSeconds + releaseSeconds,
                Double.NaN,
                Double.NaN,
                0,
                extra);
    }

    /**
     * With {@code -Ddlock.bench.histogramDir=DIR}, saves {@code jcmd <pid> GC.class_histogram} while
     * W4's locks are held, to see what the heap per held lock is made of. Outside the timed phases.
     */
    private void histogram(LockImpl impl) throws InterruptedException {
        String dir = System.getProperty("dlock.bench.histogramDir");
        if (dir == null) {
            return;
        }
        Path file = Path.of(dir, "w4-" + impl.label() + ".txt");
        String jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd").toString();
        try {
            Files.createDirectories(file.getParent());
            Process p = new ProcessBuilder(
                            jcmd, Long.toString(ProcessHandle.current().pid()), "GC.class_histogram")
                    .redirectErrorStream(true)
                    .redirectOutput(file.toFile())
                    .start();
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
            }
            log.println("W4 " + impl.label() + ": class histogram in " + file);
        } catch (IOException e) {
            log.println("W4 " + impl.label() + ": no class histogram: " + e);
        }
    }

    /**
     * The heap in use as the last of three full collections left it, by the collector's own account
     * ({@code GcInfo}); the heap read some time after a collection also counts what the client's
     * threads (renewals, I/O) allocated since. Falls back to that read where the JVM has no such
     * account.
     */
    static long usedHeapAfterGc() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            Thread.sleep(100);
            System.gc(); // a full collection under G1 (ExplicitGCInvokesConcurrent is off by default)
        }
        long afterGc = heapAfterLastGc();
        return afterGc >= 0
                ? afterGc
                : ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    /** The heap pools' use right after the JVM's most recent collection; -1 if the JVM does not say. */
    static long heapAfterLastGc() {
        Set<String> heapPools = new HashSet<>();
        for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == MemoryType.HEAP) {
                heapPools.add(pool.getName());
            }
        }
        GcInfo latest = null;
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            if (gc instanceof com.sun.management.GarbageCollectorMXBean g) {
                GcInfo info = g.getLastGcInfo();
                if (info != null && (latest == null || info.getEndTime() > latest.getEndTime())) {
                    latest = info;
                }
            }
        }
        if (latest == null) {
            return -1;
        }
        long used = 0;
        for (Map.Entry<String, MemoryUsage> e : latest.getMemoryUsageAfterGc().entrySet()) {
            if (heapPools.contains(e.getKey())) {
                used += e.getValue().getUsed();
            }
        }
        return used;
    }

    /**
     * COST: the server's own request counters over {@code costCycles} uncontended cycles, per cycle.
     * ZooKeeper: {@code zk_packets_received} from {@code mntr} (less what an idle interval of the
     * same probes adds: session pings of the open clients). Redis: the client's own requests as
     * {@code MONITOR} sees them (commands run inside scripts listed apart), and the {@code INFO
     * commandstats} delta, which counts both, without the probes themselves. The client JVM's and
     * the server's CPU time per cycle are the medians of {@code rounds} interleaved passes of
     * {@code costCycles} cycles each, without those probes.
     */
    List<Result> cost(List<LockImpl> impls) throws InterruptedException {
        List<Result> out = new ArrayList<>();
        @Nullable RedisClient redisClient = null;
        @Nullable StatefulRedisConnection<String, String> redis = null;
        try {
            if (servers.redis() != null && impls.stream().anyMatch(i -> i.backend() == Backend.REDIS)) {
                redisClient = RedisClient.create(RedisURI.create("redis://" + servers.address(Backend.REDIS)));
                redis = redisClient.connect();
            }
            Map<LockImpl, BenchLock> locks = new EnumMap<>(LockImpl.class);
            for (LockImpl impl : impls) {
                locks.put(impl, client(impl).lock("cost"));
            }
            // Warm up the clients and the servers (whose JIT would otherwise count as CPU).
            warmUp("COST", impls, (impl, length, measured) -> {
                long[] w = window(length, 0);
                return Loops.uncontended(java.util.Objects.requireNonNull(locks.get(impl)), w[0], w[1]);
            });
            int n = config.costCycles();
            // CPU time over passes of their own, before the counted one: MONITOR's feed (the server
            // writes it, a thread of this JVM reads it) is a line per command, those inside
            // scripts too, and would count as the client's and the server's work. One pass of a few
            // seconds varied by a third between runs (a collection, the compiler, the host), so
            // the passes are interleaved rounds and the median counts.
            Map<LockImpl, List<Double>> clientCpus = new EnumMap<>(LockImpl.class);
            Map<LockImpl, List<Double>> jitCpus = new EnumMap<>(LockImpl.class);
            Map<LockImpl, List<Double>> serverCpus = new EnumMap<>(LockImpl.class);
            // Redis's own account of its time in each command, read around the same passes (one
            // INFO each side, outside the CPU readings).
            Map<LockImpl, List<Map<String, ServerStats.CommandStat>>> commandRounds = new EnumMap<>(LockImpl.class);
            for (int round = 1; round <= config.rounds(); round++) {
                for (LockImpl impl : inRoundOrder(impls, round)) {
                    BenchLock lock = java.util.Objects.requireNonNull(locks.get(impl));
                    @Nullable
                    StatefulRedisConnection<String, String> commandProbe =
                            impl.backend() == Backend.REDIS ? redis : null;
                    Map<String, ServerStats.CommandStat> commands0 =
                            commandProbe == null ? Map.of() : ServerStats.redisCommandStats(commandProbe.sync());
                    long serverPid = serverPids.getOrDefault(impl.backend(), -1L);
                    long serverCpu0 = cpuNanos(serverPid);
                    long clientCpu0 = cpuNanos(ProcessHandle.current().pid());
                    long jitCpu0 = compilerCpuNanos();
                    for (int i = 0; i < n; i++) {
                        lock.acquire().release();
                    }
                    double server = serverCpu0 < 0 ? Double.NaN : (cpuNanos(serverPid) - serverCpu0) / 1e3 / n;
                    double client = clientCpu0 < 0
                            ? Double.NaN
                            : (cpuNanos(ProcessHandle.current().pid()) - clientCpu0) / 1e3 / n;
                    double jit = jitCpu0 < 0 ? Double.NaN : (compilerCpuNanos() - jitCpu0) / 1e3 / n;
                    if (commandProbe != null) {
                        commandRounds
                                .computeIfAbsent(impl, k -> new ArrayList<>())
                                .add(ServerStats.commandDelta(
                                        commands0, ServerStats.redisCommandStats(commandProbe.sync())));
                    }
                    log.printf(
                            Locale.ROOT,
                            "COST round %d %-17s client %.1f us (JIT compilers %.1f of it), server %.1f us of CPU a"
                                    + " cycle%n",
                            round,
                            impl.label(),
                            client,
                            jit,
                            server);
                    log.flush();
                    clientCpus.computeIfAbsent(impl, k -> new ArrayList<>()).add(client);
                    jitCpus.computeIfAbsent(impl, k -> new ArrayList<>()).add(jit);
                    serverCpus.computeIfAbsent(impl, k -> new ArrayList<>()).add(server);
                }
            }
            for (LockImpl impl : impls) {
                BenchLock lock = java.util.Objects.requireNonNull(locks.get(impl));
                Map<String, Object> extra = new LinkedHashMap<>();
                double perCycle;
                if (impl.backend() == Backend.ZOOKEEPER) {
                    String zk = servers.address(Backend.ZOOKEEPER);
                    long idle0 = ServerStats.zooKeeperPacketsReceived(zk);
                    long idle1 = ServerStats.zooKeeperPacketsReceived(zk);
                    long before = ServerStats.zooKeeperPacketsReceived(zk);
                    for (int i = 0; i < n; i++) {
                        lock.acquire().release();
                    }
                    long after = ServerStats.zooKeeperPacketsReceived(zk);
                    perCycle = (after - before - (idle1 - idle0)) / (double) n;
                    extra.put("counter", "zk_packets_received");
                } else if (impl.backend() == Backend.MEMCACHED) {
                    // No per-command counter that covers the meta protocol: CPU time only.
                    for (int i = 0; i < n; i++) {
                        lock.acquire().release();
                    }
                    perCycle = Double.NaN;
                    extra.put("counter", "none (memcached)");
                } else if (impl.backend() == Backend.ETCD) {
                    perCycle = EtcdMetrics.cost(servers.address(Backend.ETCD), lock, n, extra);
                } else {
                    StatefulRedisConnection<String, String> probe =
                            java.util.Objects.requireNonNull(redis, "opened above for a Redis implementation");
                    String marker = "dlock-bench-" + impl.label() + "-" + System.nanoTime();
                    Map<String, ServerStats.CommandStat> before = ServerStats.redisCommandStats(probe.sync());
                    long bytes0 = ServerStats.redisNetInputBytes(probe.sync());
                    try (RedisMonitor monitor = new RedisMonitor(servers.address(Backend.REDIS), marker)) {
                        for (int i = 0; i < n; i++) {
                            lock.acquire().release();
                        }
                        probe.sync().echo(marker);
                        monitor.awaitMarker();
                        // Read before MONITOR's probes add their own: the client's bytes, plus one ECHO.
                        long bytes = ServerStats.redisNetInputBytes(probe.sync()) - bytes0;
                        Map<String, Long> all = new java.util.TreeMap<>();
                        ServerStats.commandDelta(before, ServerStats.redisCommandStats(probe.sync()))
                                .forEach((k, d) -> all.put(k, d.calls()));
                        perCycle = monitor.requests().values().stream()
                                        .mapToLong(Long::longValue)
                                        .sum()
                                / (double) n;
                        extra.put("requests", perCycleText(monitor.requests(), n));
                        extra.put("insideScripts", perCycleText(monitor.inScripts(), n));
                        extra.put("commandstats", perCycleText(all, n));
                        extra.put("netInBytesPerCycle", bytes / (double) n);
                        List<Map<String, ServerStats.CommandStat>> commandTimes =
                                java.util.Objects.requireNonNull(commandRounds.get(impl));
                        List<Double> commandUs = commandUsPerCycle(
                                commandTimes, ownShares(monitor.requests(), monitor.inTransactions()), n);
                        extra.put("serverCommandUsPerCycle", median(commandUs));
                        extra.put("serverCommandUsRounds", commandUs);
                        extra.put("usecPerCall", usecPerCallText(commandTimes));
                    }
                }
                List<Double> server = java.util.Objects.requireNonNull(serverCpus.get(impl));
                List<Double> client = java.util.Objects.requireNonNull(clientCpus.get(impl));
                extra.put("serverCpuUsPerCycle", median(server));
                List<Double> jit = java.util.Objects.requireNonNull(jitCpus.get(impl));
                List<Double> clientNoJit = new ArrayList<>();
                for (int i = 0; i < client.size(); i++) {
                    clientNoJit.add(client.get(i) - jit.get(i));
                }
                extra.put("clientCpuUsPerCycle", median(client));
                extra.put(Report.CLIENT_CPU_ROUNDS, List.copyOf(client));
                extra.put("clientCpuNoJitUsPerCycle", median(clientNoJit));
                extra.put("clientCpuNoJitUsRounds", List.copyOf(clientNoJit));
                extra.put("serverCpuUsRounds", List.copyOf(server));
                log.printf(Locale.ROOT, "COST %s: %.2f requests per cycle %s%n", impl.label(), perCycle, extra);
                log.flush();
                out.add(new Result("COST", impl, perCycle, n, Double.NaN, Double.NaN, Double.NaN, 0, extra));
            }
        } finally {
            if (redis != null) {
                redis.close();
            }
            if (redisClient != null) {
                redisClient.shutdown();
            }
        }
        return out;
    }
}
