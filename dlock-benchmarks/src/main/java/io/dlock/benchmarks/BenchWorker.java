package io.dlock.benchmarks;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * W3's, SCALE's and W6's worker: a child JVM that opens one client per implementation and, on each
 * command from its parent, runs the contended loop ({@link Loops#contended}) on one lock, the same
 * code W2 runs in one JVM, or the spread loop over several locks (SCALE on platform threads; W6 on
 * virtual threads, on a JDK 21+), or W6's heap per waiting virtual thread, counting JFR's
 * pinned-thread events meanwhile.
 *
 * <p>Arguments: {@code <zookeeper address or -> <redis address or -> <impl,impl,...>}. Protocol on
 * stdin/stdout, one line each:
 * <pre>{@code
 * -> READY                                                     (clients connected)
 * <- RUN <impl> <lock> <threads> <startAtNanos> <endAtNanos> <file>
 * -> DONE <impl> <ops>  |  FAILED <impl> <message>            (samples written to <file>)
 * <- VRUN <impl> <name-prefix> <locks> <threads> <startAtNanos> <endAtNanos> <file>
 * -> DONE <impl> <ops> <pinned> <pinned-loading-classes> <pinned-by-dlock>   (locks <name-prefix>-<i>)
 * <- SRUN <impl> <name-prefix> <locks> <threads> <startAtNanos> <endAtNanos> <file>
 * -> DONE <impl> <ops>                       (platform threads over locks <name-prefix>-<i>, SCALE)
 * <- TOUCH <impl> <name-prefix> <locks>
 * -> DONE <impl> <locks>                     (each of those locks taken once, so that it exists)
 * <- VHEAP <impl> <name-prefix> <locks> <threads>
 * -> DONE <impl> <bytes-per-waiting-thread> <pinned> <pinned-loading-classes> <pinned-by-dlock>
 *    (after VRUN and VHEAP, up to three lines "PINNED-BY-DLOCK <impl> <stack>" come before DONE)
 * <- QUIT
 * }</pre>
 * Windows are given as {@code System.nanoTime()} readings, which on Linux are comparable across
 * processes ({@code CLOCK_MONOTONIC}), so all workers start and stop together.
 *
 * <p>Thread-safety: a process entry point.
 */
public final class BenchWorker {
    private static final int TOUCH_THREADS = 8;

    private BenchWorker() {}

    /**
     * Runs the worker until {@code QUIT} or end of input.
     *
     * <p>Blocking: until told to quit. On failure: exits with status 1 after printing the error.
     *
     * @param args the zookeeper address, the redis address ({@code -} for none) and the implementations
     */
    public static void main(String[] args) {
        Servers servers = new Servers(
                args[0].equals("-") ? null : args[0],
                args[1].equals("-") ? null : args[1],
                args.length > 3 && !args[3].equals("-") ? args[3] : null,
                args.length > 4 && !args[4].equals("-") ? args[4] : null,
                args.length > 5 && !args[5].equals("-") ? args[5] : null,
                args.length > 6 && !args[6].equals("-") ? args[6] : null);
        Map<LockImpl, BenchClient> clients = new EnumMap<>(LockImpl.class);
        Map<String, BenchLock> locks = new HashMap<>();
        int status = 0;
        try {
            for (String label : args[2].split(",")) {
                LockImpl impl = LockImpl.parse(label);
                clients.put(impl, impl.open(servers));
            }
            System.out.println("READY");
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            String line;
            while ((line = in.readLine()) != null && !line.equals("QUIT")) {
                String[] w = line.split(" ");
                boolean known = (w[0].equals("RUN") && w.length == 7)
                        || ((w[0].equals("VRUN") || w[0].equals("SRUN")) && w.length == 8)
                        || (w[0].equals("TOUCH") && w.length == 4)
                        || (w[0].equals("VHEAP") && w.length == 5);
                if (!known) {
                    System.out.println("FAILED ? unknown command: " + line);
                    continue;
                }
                BenchClient client = java.util.Objects.requireNonNull(clients.get(LockImpl.parse(w[1])));
                try {
                    System.out.println(execute(w, client, locks));
                } catch (RuntimeException | InterruptedException | IOException e) {
                    System.out.println("FAILED " + w[1] + " " + e.toString().replace('\n', ' '));
                }
            }
        } catch (Throwable e) {
            e.printStackTrace();
            status = 1;
        } finally {
            for (BenchClient c : clients.values()) {
                c.close();
            }
        }
        System.exit(status);
    }

    /**
     * Runs one command and returns its {@code DONE} line. A method of its own so that nothing a run
     * measured stays reachable from the command loop's frame into the next one: W6's heap figure
     * would count it as freed.
     */
    private static String execute(String[] w, BenchClient client, Map<String, BenchLock> locks)
            throws InterruptedException, IOException {
        if (w[0].equals("RUN")) {
            BenchLock lock = locks.computeIfAbsent(w[1] + "/" + w[2], k -> client.lock(w[2]));
            Measurement m = Loops.contended(
                    lock, Integer.parseInt(w[3]), Long.parseLong(w[4]), Long.parseLong(w[5]), "w3-" + w[1]);
            write(m, Path.of(w[6]));
            return "DONE " + w[1] + " " + m.ops;
        }
        List<BenchLock> some = new ArrayList<>();
        for (int i = 0; i < Integer.parseInt(w[3]); i++) {
            String name = w[2] + "-" + i;
            some.add(locks.computeIfAbsent(w[1] + "/" + name, k -> client.lock(name)));
        }
        if (w[0].equals("TOUCH")) {
            Loops.touchAll(some, TOUCH_THREADS, "touch-" + w[1]);
            return "DONE " + w[1] + " " + some.size();
        }
        if (w[0].equals("SRUN")) {
            Measurement m = Loops.spread(
                    some,
                    Integer.parseInt(w[4]),
                    Long.parseLong(w[5]),
                    Long.parseLong(w[6]),
                    "scale-" + w[1],
                    Loops.PLATFORM);
            write(m, Path.of(w[7]));
            return "DONE " + w[1] + " " + m.ops;
        }
        VirtualThreads.Pins pins = new VirtualThreads.Pins();
        String figure = w[0].equals("VRUN")
                ? Long.toString(virtualRun(w, some))
                : Double.toString(VirtualThreads.heapPerWaiter(some, Integer.parseInt(w[4])));
        long[] pinned = pins.stop();
        pins.dlockStacks().forEach(stack -> System.out.println("PINNED-BY-DLOCK " + w[1] + " " + stack));
        return "DONE " + w[1] + " " + figure + " " + pinned[0] + " " + pinned[1] + " " + pinned[2];
    }

    private static long virtualRun(String[] w, List<BenchLock> some) throws InterruptedException, IOException {
        Measurement m = Loops.spread(
                some,
                Integer.parseInt(w[4]),
                Long.parseLong(w[5]),
                Long.parseLong(w[6]),
                "w6-" + w[1],
                VirtualThreads.starter());
        write(m, Path.of(w[7]));
        return m.ops;
    }

    static void write(Measurement m, Path file) throws IOException {
        try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(file)))) {
            out.writeLong(m.ops);
            out.writeLong(m.windowNanos);
            out.writeLong(m.directOverlaps);
            writeArray(out, m.latencies);
            writeArray(out, m.enters);
            writeArray(out, m.exits);
        }
    }

    static Measurement read(Path file) throws IOException {
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(Files.newInputStream(file)))) {
            long ops = in.readLong();
            long window = in.readLong();
            long direct = in.readLong();
            return new Measurement(ops, window, readArray(in), readArray(in), readArray(in), direct);
        }
    }

    private static void writeArray(DataOutputStream out, long[] values) throws IOException {
        out.writeInt(values.length);
        for (long v : values) {
            out.writeLong(v);
        }
    }

    private static long[] readArray(DataInputStream in) throws IOException {
        long[] values = new long[in.readInt()];
        for (int i = 0; i < values.length; i++) {
            values[i] = in.readLong();
        }
        return values;
    }
}
