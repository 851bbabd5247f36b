package io.dlock.cli.internal.torture;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.cli.internal.WorkerArgs;
import io.dlock.testkit.FencedStoreServer;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The main class of one {@code dlock torture} worker JVM: a lock client that, until told to stop,
 * takes the lock, reads the {@link FencedStoreServer}'s value with the lease's fencing token,
 * works a few milliseconds and writes the value plus one with the same token, then releases.
 *
 * <p>It never checks {@code Lease.isValid()} before writing: the pause or partition it is put
 * through may come between such a check and the write, so only the fencing token can keep its
 * write out, which is what the torture measures.
 *
 * <p>Arguments ({@code --name value} pairs, all required): {@code --uri} the lock backend URI,
 * {@code --client} this worker's name, {@code --store-port} the store's port (on 127.0.0.1, or on {@code --store-host}, optional), {@code
 * --lock} the lock name, {@code --wait-ms} the longest wait for one acquisition, {@code --work-ms}
 * the time spent inside each critical section, {@code --max-runtime-ms} when to halt whatever
 * happens.
 *
 * <p>Standard input: {@code HOLD <ms>} makes the next critical section print {@code HOLDING
 * <token>} after its read and stay inside for that long (the controller pauses, kills or cuts off
 * the worker there); {@code STOP} ends the loop after the current operation. End of input halts the
 * JVM (the controller is gone).
 *
 * <p>Standard output, one line per event: {@code READY}; {@code HOLDING <token>}; {@code LOST
 * <token>} when dlock reports the lease lost; {@code REFUSED <read|write> <token> <leaseValid>} when
 * the store refuses a stale token; {@code TIMEOUT} for an acquisition that waited {@code --wait-ms}
 * in vain; {@code ERROR <message>} for a failed operation (the loop goes on); finally {@code DONE
 * <operations> <writes> <refused> <errors>}, or {@code FATAL <message>} and exit code 2.
 *
 * <p>Thread-safety: a process entry point; not for use as a library.
 */
public final class TortureWorker {

    static final String READY = "READY";
    static final String HOLDING = "HOLDING";
    static final String LOST = "LOST";
    static final String REFUSED = "REFUSED";
    static final String TIMEOUT = "TIMEOUT";
    static final String ERROR = "ERROR";
    static final String DONE = "DONE";
    static final String FATAL = "FATAL";
    static final String HOLD = "HOLD";
    static final String STOP = "STOP";

    private static final long ERROR_BACKOFF_MS = 50;

    private static volatile boolean stop;
    private static final AtomicLong holdMs = new AtomicLong();

    private TortureWorker() {}

    /**
     * Runs one worker; see the class description.
     *
     * <p>Blocking: until {@code STOP}, end of input or {@code --max-runtime-ms}. Thread-safety: a
     * process entry point. On failure: prints {@code FATAL <message>} and exits with status 2
     * (status 1 for bad arguments).
     *
     * @param args {@code --name value} pairs
     */
    public static void main(String[] args) {
        Map<String, String> options;
        try {
            options = parse(args);
        } catch (IllegalArgumentException e) {
            emit(FATAL + " " + e.getMessage());
            System.exit(1);
            return;
        }
        startWatchdog(Long.parseLong(options.get("max-runtime-ms")));
        int status;
        try {
            run(options);
            status = 0;
        } catch (RuntimeException e) {
            emit(FATAL + " " + oneLine(e));
            status = 2;
        }
        System.out.flush();
        System.exit(status);
    }

    private static void run(Map<String, String> o) {
        String name = required(o, "client");
        Duration wait = Duration.ofMillis(Long.parseLong(o.get("wait-ms")));
        long workMs = Long.parseLong(o.get("work-ms"));
        long operations = 0;
        long writes = 0;
        long refused = 0;
        long errors = 0;
        try (FencedStoreServer.Client store = FencedStoreServer.Client.connect(
                        storeHost(o), Integer.parseInt(required(o, "store-port")), name);
                LockClient client = LockClient.connect(required(o, "uri"))) {
            DistributedLock lock = client.lock(required(o, "lock"));
            startStdinReader();
            emit(READY);
            while (!stop) {
                Optional<Lease> acquired;
                try {
                    acquired = lock.tryAcquire(wait);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted", e);
                } catch (RuntimeException e) {
                    errors++;
                    emit(ERROR + " acquire: " + oneLine(e));
                    sleep(ERROR_BACKOFF_MS);
                    continue;
                }
                if (acquired.isEmpty()) {
                    emit(TIMEOUT);
                    continue;
                }
                operations++;
                try (Lease lease = acquired.get()) {
                    long token = lease.fencingToken();
                    lease.onLost(e -> emit(LOST + " " + token));
                    OptionalLong value = store.read(token);
                    if (value.isEmpty()) {
                        refused++;
                        emit(REFUSED + " read " + token + " " + lease.isValid());
                        continue;
                    }
                    long hold = holdMs.getAndSet(0);
                    if (hold > 0) {
                        emit(HOLDING + " " + token);
                        sleep(hold);
                    } else if (workMs > 0) {
                        sleep(ThreadLocalRandom.current().nextLong(workMs / 2, workMs + 1));
                    }
                    if (store.write(token, value.getAsLong() + 1)) {
                        writes++;
                    } else {
                        refused++;
                        emit(REFUSED + " write " + token + " " + lease.isValid());
                    }
                } catch (RuntimeException e) {
                    errors++;
                    emit(ERROR + " " + oneLine(e));
                    sleep(ERROR_BACKOFF_MS);
                }
            }
        }
        emit(DONE + " " + operations + " " + writes + " " + refused + " " + errors);
    }

    private static void startStdinReader() {
        Thread reader = new Thread(
                () -> {
                    try (BufferedReader in =
                            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                        String line;
                        while ((line = in.readLine()) != null) {
                            String[] parts = line.trim().split("\\s+");
                            if (parts[0].equals(STOP)) {
                                stop = true;
                            } else if (parts[0].equals(HOLD) && parts.length == 2) {
                                holdMs.set(Long.parseLong(parts[1]));
                            }
                        }
                    } catch (IOException | NumberFormatException e) {
                        // treated as the controller being gone
                    }
                    // Standard input closed: the torture that started us is gone; do not linger.
                    Runtime.getRuntime().halt(3);
                },
                "torture-worker-stdin");
        reader.setDaemon(true);
        reader.start();
    }

    private static void startWatchdog(long maxRuntimeMs) {
        Thread watchdog = new Thread(
                () -> {
                    try {
                        TimeUnit.MILLISECONDS.sleep(maxRuntimeMs);
                        emit(FATAL + " ran longer than " + maxRuntimeMs + " ms; halting");
                        Runtime.getRuntime().halt(4);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                },
                "torture-worker-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
    }

    /** {@code --store-host}, 127.0.0.1 when absent (a worker in a network namespace needs another). */
    private static InetAddress storeHost(Map<String, String> options) {
        try {
            return InetAddress.getByName(options.getOrDefault("store-host", "127.0.0.1"));
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("--store-host: " + e.getMessage(), e);
        }
    }

    /** An option {@link #parse} has checked is present. */
    private static String required(Map<String, String> options, String name) {
        return Objects.requireNonNull(options.get(name), name);
    }

    static Map<String, String> parse(String[] args) {
        Map<String, String> values = WorkerArgs.parse(args);
        for (String required :
                new String[] {"uri", "client", "store-port", "lock", "wait-ms", "work-ms", "max-runtime-ms"}) {
            if (!values.containsKey(required)) {
                throw new IllegalArgumentException("--" + required + " is required");
            }
        }
        for (String number : new String[] {"store-port", "wait-ms", "work-ms", "max-runtime-ms"}) {
            try {
                if (Long.parseLong(values.get(number)) < 0) {
                    throw new NumberFormatException();
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "--" + number + " must be a number >= 0, got '" + values.get(number) + "'");
            }
        }
        return values;
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private static String oneLine(Throwable e) {
        return e.toString().replace('\n', ' ');
    }

    private static void emit(String line) {
        synchronized (System.out) {
            System.out.println(line);
            System.out.flush();
        }
    }
}
