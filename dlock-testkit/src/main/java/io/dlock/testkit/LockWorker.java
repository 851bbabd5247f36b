package io.dlock.testkit;

import io.dlock.Lease;
import io.dlock.LockClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A lock client in a child JVM, for tests that need separate processes: start it with {@link
 * ChildJvm#start(Class, java.util.List)} and read its lines. It prints {@code READY} once connected.
 *
 * <p>{@code count <uri> <lock> <counterFile> <iterations>}: increments the number in the file under
 * the lock (an unprotected read-modify-write) and appends each grant's fencing token to
 * {@code counterFile.tokens}. {@code hold <uri> <lock>}: acquires, prints {@code HOLDING <token>}
 * and holds until killed. {@code hold-check <uri> <lock>}: like {@code hold}, then answers each
 * {@code check} line on stdin with {@code VALID <isValid()>} (for pause tests). {@code permits <uri>
 * <semaphore> <total> <take>}: takes {@code take} of the semaphore's {@code total} permits, prints
 * {@code HOLDING <token>} and holds until killed. {@code lead <uri> <election>}: joins the leader
 * election, prints {@code LEADING <term>} when elected and leads until killed.
 *
 * <p>Not thread-safe (a process's main); exits with a stack trace on any failure.
 */
public final class LockWorker {
    private LockWorker() {}

    /**
     * Runs one mode until done or killed. Blocks; throws {@link IllegalArgumentException} on an
     * unknown mode.
     *
     * @param args the mode, the URI, then the mode's arguments
     */
    public static void main(String[] args) throws Exception {
        try (LockClient client = LockClient.connect(args[1])) {
            System.out.println("READY");
            switch (args[0]) {
                case "count" -> count(client, args[2], Path.of(args[3]), Integer.parseInt(args[4]));
                case "hold" -> hold(client, args[2]);
                case "hold-check" -> holdAndCheck(client, args[2]);
                case "lead" -> lead(client, args[2]);
                case "permits" -> permits(client, args[2], Integer.parseInt(args[3]), Integer.parseInt(args[4]));
                default -> throw new IllegalArgumentException(args[0]);
            }
        }
    }

    private static void count(LockClient client, String lock, Path file, int iterations) throws Exception {
        Path tokens = Path.of(file + ".tokens");
        for (int i = 0; i < iterations; i++) {
            try (Lease lease = client.lock(lock).acquire()) {
                long value = Long.parseLong(Files.readString(file).trim());
                Thread.onSpinWait();
                Files.writeString(file, Long.toString(value + 1));
                Files.writeString(
                        tokens,
                        lease.fencingToken() + "\n",
                        StandardCharsets.UTF_8,
                        StandardOpenOption.CREATE,
                        StandardOpenOption.APPEND);
            }
        }
        System.out.println("DONE");
    }

    private static void holdAndCheck(LockClient client, String lock) throws Exception {
        Lease lease = client.lock(lock).acquire();
        System.out.println("HOLDING " + lease.fencingToken());
        java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.equals("check")) {
                System.out.println("VALID " + lease.isValid());
            }
        }
    }

    private static void permits(LockClient client, String name, int total, int take) throws Exception {
        Lease lease = client.semaphore(name, total).acquire(take);
        System.out.println("HOLDING " + lease.fencingToken());
        Thread.sleep(Long.MAX_VALUE);
    }

    private static void lead(LockClient client, String election) throws Exception {
        Lease term = client.leaderElection(election)
                .start()
                .awaitLeadership(java.time.Duration.ofDays(1))
                .orElseThrow();
        System.out.println("LEADING " + term.fencingToken());
        Thread.sleep(Long.MAX_VALUE);
    }

    private static void hold(LockClient client, String lock) throws Exception {
        Lease lease = client.lock(lock).acquire();
        System.out.println("HOLDING " + lease.fencingToken());
        Thread.sleep(Long.MAX_VALUE);
    }
}
