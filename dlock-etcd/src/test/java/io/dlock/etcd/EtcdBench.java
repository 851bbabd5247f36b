package io.dlock.etcd;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.EtcdServer;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.PutOption;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The etcd side-by-side runner (not part of the test suite: a main): on one etcd started here,
 * the floor (a put with a lease in a transaction guarded by "key absent", then a delete), jetcd's
 * own {@code Lock} client, and dlock-etcd, through the workloads of BENCHMARKS.md:
 *
 * <ul>
 *   <li>W1: one thread, acquire+release cycles on one lock (cycles/s, p50 latency);
 *   <li>W2: 8 threads of one JVM on one lock (hand-offs/s);
 *   <li>W3: 4 JVMs of 2 threads each on one lock (hand-offs/s);
 *   <li>W4: one client holds 10,000 locks at once (heap bytes per held lock).
 * </ul>
 *
 * <p>Each measured phase follows a warm-up; W1 to W3 interleave the implementations over several
 * rounds and keep the median. Run from the repository root (see BENCHMARKS.md for the command).
 */
public final class EtcdBench {
    private static final int ROUNDS = Integer.getInteger("rounds", 3);
    private static final Duration WARMUP = Duration.ofSeconds(Integer.getInteger("warmupSeconds", 3));
    private static final Duration MEASURE = Duration.ofSeconds(Integer.getInteger("measureSeconds", 8));

    /** An implementation under test: acquire returns what release takes. */
    interface Impl extends AutoCloseable {
        Object acquire(String name) throws Exception;

        void release(Object held) throws Exception;

        @Override
        void close();
    }

    /** The least a lease-based lock on etcd sends: a guarded put with a lease, a delete. Not a lock. */
    static final class Floor implements Impl {
        final Client client;
        final long lease;
        final AtomicLong seq = new AtomicLong();

        Floor(String endpoint) throws Exception {
            client = Client.builder().endpoints(endpoint).build();
            lease = client.getLeaseClient().grant(120).get().getID();
        }

        @Override
        public Object acquire(String name) throws Exception {
            ByteSequence key = bytes("floor/" + name + "/" + seq.incrementAndGet());
            client.getKVClient()
                    .txn()
                    .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.createRevision(0)))
                    .Then(Op.put(
                            key,
                            bytes("x"),
                            PutOption.builder().withLeaseId(lease).build()))
                    .commit()
                    .get();
            return key;
        }

        @Override
        public void release(Object held) throws Exception {
            client.getKVClient().delete((ByteSequence) held).get();
        }

        @Override
        public void close() {
            client.close();
        }
    }

    /** jetcd's {@code Lock} client (etcd's server-side v3lock); one lease per thread, as it needs. */
    static final class JetcdLock implements Impl {
        final Client client;
        final ThreadLocal<Long> lease;

        JetcdLock(String endpoint) {
            client = Client.builder().endpoints(endpoint).build();
            lease = ThreadLocal.withInitial(() -> {
                try {
                    return client.getLeaseClient().grant(120).get().getID();
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
        }

        @Override
        public Object acquire(String name) throws Exception {
            return client.getLockClient()
                    .lock(bytes("jetcd/" + name), lease.get())
                    .get()
                    .getKey();
        }

        @Override
        public void release(Object held) throws Exception {
            client.getLockClient().unlock((ByteSequence) held).get();
        }

        @Override
        public void close() {
            client.close();
        }
    }

    /** dlock-etcd with its defaults. */
    static final class Dlock implements Impl {
        final LockClient client;

        Dlock(String uri) {
            client = LockClient.connect(uri);
        }

        @Override
        public Object acquire(String name) throws Exception {
            return client.lock(name).acquire();
        }

        @Override
        public void release(Object held) {
            ((Lease) held).close();
        }

        @Override
        public void close() {
            client.close();
        }
    }

    static Impl open(String impl, EtcdServer server) throws Exception {
        String endpoint = "http://" + server.connectString();
        return switch (impl) {
            case "floor" -> new Floor(endpoint);
            case "jetcd-lock" -> new JetcdLock(endpoint);
            case "dlock-etcd" -> new Dlock(server.uri("bench"));
            default -> throw new IllegalArgumentException(impl);
        };
    }

    static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("worker")) {
            worker(args);
            return;
        }
        List<String> impls = List.of("floor", "jetcd-lock", "dlock-etcd");
        System.out.printf(
                "EtcdBench: %d rounds, warm-up %s, measure %s; JVM %s; %d CPUs%n",
                ROUNDS,
                WARMUP,
                MEASURE,
                System.getProperty("java.vm.version"),
                Runtime.getRuntime().availableProcessors());
        try (EtcdServer server = EtcdServer.start()) {
            double[][] w1 = new double[impls.size()][ROUNDS];
            double[][] w1p50 = new double[impls.size()][ROUNDS];
            double[][] w2 = new double[impls.size()][ROUNDS];
            double[][] w3 = new double[impls.size()][ROUNDS];
            for (int round = 0; round < ROUNDS; round++) {
                for (int i = 0; i < impls.size(); i++) {
                    try (Impl impl = open(impls.get(i), server)) {
                        double[] r = run(impl, "w1-" + round, 1, WARMUP, MEASURE);
                        w1[i][round] = r[0];
                        w1p50[i][round] = r[1];
                        System.out.printf(
                                Locale.ROOT,
                                "W1 %-11s round %d: %,.0f cycles/s, p50 %.0f us%n",
                                impls.get(i),
                                round,
                                r[0],
                                r[1]);
                    }
                }
                for (int i = 1; i < impls.size(); i++) { // the floor is no lock: W2/W3 only for locks
                    try (Impl impl = open(impls.get(i), server)) {
                        w2[i][round] = run(impl, "w2-" + round, 8, WARMUP, MEASURE)[0];
                        System.out.printf(
                                Locale.ROOT,
                                "W2 %-11s round %d: %,.0f hand-offs/s%n",
                                impls.get(i),
                                round,
                                w2[i][round]);
                    }
                    w3[i][round] = w3(impls.get(i), server, "w3-" + round);
                    System.out.printf(
                            Locale.ROOT, "W3 %-11s round %d: %,.0f hand-offs/s%n", impls.get(i), round, w3[i][round]);
                }
            }
            System.out.println();
            for (int i = 0; i < impls.size(); i++) {
                System.out.printf(
                        Locale.ROOT,
                        "%-11s W1 %,8.0f/s (p50 %4.0f us)  W2 %,8.0f/s  W3 %,8.0f/s%n",
                        impls.get(i),
                        median(w1[i]),
                        median(w1p50[i]),
                        median(w2[i]),
                        median(w3[i]));
            }
            for (int i = 1; i < impls.size(); i++) {
                try (Impl impl = open(impls.get(i), server)) {
                    System.out.printf(
                            Locale.ROOT,
                            "W4 %-11s %,.0f heap bytes per held lock (10,000 held)%n",
                            impls.get(i),
                            w4(impl, 10_000));
                }
            }
        }
    }

    /** Runs {@code threads} threads of acquire/release on one lock; returns ops/s and p50 µs. */
    static double[] run(Impl impl, String name, int threads, Duration warmup, Duration measure) throws Exception {
        AtomicBoolean measuring = new AtomicBoolean();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong count = new AtomicLong();
        long[][] latencies = new long[threads][];
        List<Thread> ts = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int id = t;
            Thread th = new Thread(() -> {
                long[] lat = new long[1 << 20];
                int n = 0;
                try {
                    while (!stop.get()) {
                        long start = System.nanoTime();
                        Object held = impl.acquire(name);
                        impl.release(held);
                        if (measuring.get()) {
                            count.incrementAndGet();
                            if (n < lat.length) {
                                lat[n++] = System.nanoTime() - start;
                            }
                        }
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                latencies[id] = Arrays.copyOf(lat, n);
            });
            th.start();
            ts.add(th);
        }
        Thread.sleep(warmup.toMillis());
        measuring.set(true);
        long start = System.nanoTime();
        Thread.sleep(measure.toMillis());
        measuring.set(false);
        long elapsed = System.nanoTime() - start;
        stop.set(true);
        for (Thread th : ts) {
            th.join(TimeUnit.MINUTES.toMillis(1));
        }
        long[] all = Arrays.stream(latencies)
                .filter(a -> a != null)
                .flatMapToLong(Arrays::stream)
                .sorted()
                .toArray();
        double p50 = all.length == 0 ? 0 : all[all.length / 2] / 1000.0;
        return new double[] {count.get() / (elapsed / 1e9), p50};
    }

    /** W3: 4 worker JVMs of 2 threads; each prints its hand-offs in the measured window. */
    static double w3(String impl, EtcdServer server, String name) throws Exception {
        List<ChildJvm> jvms = new ArrayList<>();
        try {
            for (int j = 0; j < 4; j++) {
                jvms.add(ChildJvm.start(
                        EtcdBench.class,
                        List.of(
                                "worker",
                                impl,
                                server.connectString(),
                                server.uri("bench"),
                                name,
                                "" + WARMUP.toMillis(),
                                "" + MEASURE.toMillis()),
                        List.of("-Xmx256m", "-XX:+UseSerialGC")));
            }
            double total = 0;
            for (ChildJvm jvm : jvms) {
                String line = jvm.awaitLine("COUNT", Duration.ofMinutes(2));
                total += Double.parseDouble(line.split(" ")[1]);
            }
            return total;
        } finally {
            jvms.forEach(ChildJvm::close);
        }
    }

    private static void worker(String[] args) throws Exception {
        String impl = args[1];
        String endpoint = "http://" + args[2];
        Impl i =
                switch (impl) {
                    case "jetcd-lock" -> new JetcdLock(endpoint);
                    case "dlock-etcd" -> new Dlock(args[3]);
                    default -> new Floor(endpoint);
                };
        try (i) {
            double[] r = run(
                    i,
                    args[4],
                    2,
                    Duration.ofMillis(Long.parseLong(args[5])),
                    Duration.ofMillis(Long.parseLong(args[6])));
            System.out.println("COUNT " + r[0]);
        }
    }

    /** W4: holds {@code n} distinct locks from one client; heap per held lock after full GCs. */
    static double w4(Impl impl, int n) throws Exception {
        List<Object> held = new ArrayList<>(n);
        impl.release(impl.acquire("w4-warm"));
        long before = usedHeapAfterGc();
        for (int i = 0; i < n; i++) {
            held.add(impl.acquire("w4-" + i));
        }
        long after = usedHeapAfterGc();
        for (Object h : held) {
            impl.release(h);
        }
        return (after - before) / (double) n;
    }

    static long usedHeapAfterGc() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(200);
        }
        var heap = ManagementFactory.getMemoryMXBean().getHeapMemoryUsage();
        return heap.getUsed();
    }

    static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        return sorted[sorted.length / 2];
    }
}
