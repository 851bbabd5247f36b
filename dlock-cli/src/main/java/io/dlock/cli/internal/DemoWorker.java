package io.dlock.cli.internal;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * The main class of one {@code dlock demo} worker JVM: an order-processing service that sells
 * items from a {@link StockServer} until it is empty, with or without a dlock lock around each
 * read-modify-write.
 *
 * <p>Arguments ({@code --name value} pairs):
 *
 * <ul>
 *   <li>{@code --port P} the stock server's port on 127.0.0.1 (required);
 *   <li>{@code --client NAME} this worker's name (required);
 *   <li>{@code --lock-uri URI} take lock {@code --lock-name} (default {@code stock}) from this
 *       backend around each order; without it the worker runs unlocked with token 0;
 *   <li>{@code --order-ms MIN-MAX} how long processing one order takes (default {@code 5-10});
 *   <li>{@code --hold-at K} and {@code --hold-for-ms D} on the K-th order, after reading the stock,
 *       announce {@link #HOLDING} and stay inside the critical section for D ms; that order is the
 *       worker's last (the demo kills or pauses it there);
 *   <li>{@code --max-runtime-ms T} halt after T ms whatever happens (default 120000).
 * </ul>
 *
 * <p>Protocol on standard output, one line per event: {@link #READY} once connected; then it waits
 * for the line {@link #GO} on standard input; per order {@code WAITING <n>}, {@code ACQUIRED
 * <token>}, {@code SOLD <token> <newStock>} or {@code REJECTED <token> <highestToken>}; {@code
 * HOLDING <token> <stockRead>} and, after that order's write, {@code LEASE_VALID <true|false>};
 * {@code LOST <token>} when dlock reports a lease lost; finally {@code DONE <itemsSold>}, or {@code
 * ERROR <message>} and exit code 2. The worker halts when its standard input closes (the demo is
 * gone).
 *
 * <p>Thread-safety: a process entry point; not for use as a library.
 */
public final class DemoWorker {

    /** Printed once connected to the stock server (and the lock backend). */
    public static final String READY = "READY";
    /** The line on standard input that starts the selling. */
    public static final String GO = "GO";
    /** {@code WAITING <order>}: about to acquire the lock for the n-th order. */
    public static final String WAITING = "WAITING";
    /** {@code ACQUIRED <token>}: the lock is held. */
    public static final String ACQUIRED = "ACQUIRED";
    /** {@code HOLDING <token> <stockRead>}: inside the critical section, staying there. */
    public static final String HOLDING = "HOLDING";
    /** {@code SOLD <token> <newStock>}: a write was accepted. */
    public static final String SOLD = "SOLD";
    /** {@code REJECTED <token> <highestToken>}: the stock refused a stale token. */
    public static final String REJECTED = "REJECTED";
    /** {@code LEASE_VALID <bool>}: {@code Lease.isValid()} right after the held order's write. */
    public static final String LEASE_VALID = "LEASE_VALID";
    /** {@code LOST <token>}: dlock reported the lease lost. */
    public static final String LOST = "LOST";
    /** {@code DONE <itemsSold>}: finished normally. */
    public static final String DONE = "DONE";
    /** {@code ERROR <message>}: failed; exit code 2. */
    public static final String ERROR = "ERROR";

    private DemoWorker() {}

    /**
     * Runs one worker; see the class description for arguments and output.
     *
     * <p>Blocking: until the stock is sold out, the held order is done, or the process is killed.
     * Thread-safety: a process entry point. On failure: prints {@code ERROR <message>} and exits
     * with status 2 (status 1 for bad arguments).
     *
     * @param args {@code --name value} pairs
     */
    public static void main(String[] args) {
        Config config;
        try {
            config = Config.parse(args);
        } catch (IllegalArgumentException e) {
            emit(ERROR + " " + e.getMessage());
            System.exit(1);
            return;
        }
        startWatchdog(config.maxRuntimeMs());
        int status;
        try {
            status = run(config);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            emit(ERROR + " interrupted");
            status = 2;
        } catch (RuntimeException e) {
            emit(ERROR + " " + e.toString().replace('\n', ' '));
            status = 2;
        }
        System.out.flush();
        System.exit(status);
    }

    private static int run(Config config) throws InterruptedException {
        CountDownLatch go = new CountDownLatch(1);
        try (StockClient stock = StockClient.connect(config.port());
                LockClient client = config.lockUri() == null ? null : LockClient.connect(config.lockUri())) {
            DistributedLock lock = client == null ? null : client.lock(config.lockName());
            stock.get(); // warm the request path, so that all workers' first reads after GO come together
            startStdinReader(go);
            emit(READY);
            go.await();
            int sold = 0;
            for (int order = 1; ; order++) {
                boolean hold = order == config.holdAt();
                Lease lease = null;
                if (lock != null) {
                    emit(WAITING + " " + order);
                    lease = lock.acquire();
                    long grantedToken = lease.fencingToken();
                    emit(ACQUIRED + " " + grantedToken);
                    lease.onLost(lost -> emit(LOST + " " + grantedToken));
                }
                try {
                    long token = lease == null ? 0 : lease.fencingToken();
                    int read = stock.get();
                    if (read == 0) {
                        break;
                    }
                    if (hold) {
                        emit(HOLDING + " " + token + " " + read);
                        Thread.sleep(config.holdForMs());
                    } else {
                        Thread.sleep(
                                ThreadLocalRandom.current().nextLong(config.orderMinMs(), config.orderMaxMs() + 1));
                    }
                    StockClient.PutResult result = stock.put(read - 1, config.client(), token);
                    if (result.accepted()) {
                        sold++;
                        emit(SOLD + " " + token + " " + (read - 1));
                    } else {
                        emit(REJECTED + " " + token + " " + result.highestToken());
                    }
                    if (hold) {
                        if (lease != null) {
                            emit(LEASE_VALID + " " + lease.isValid());
                        }
                        break;
                    }
                } finally {
                    if (lease != null) {
                        lease.close();
                    }
                }
            }
            emit(DONE + " " + sold);
            return 0;
        }
    }

    private static void startStdinReader(CountDownLatch go) {
        Thread reader = new Thread(
                () -> {
                    try (BufferedReader in =
                            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                        String line;
                        while ((line = in.readLine()) != null) {
                            if (line.trim().equals(GO)) {
                                go.countDown();
                            }
                        }
                    } catch (IOException e) {
                        // treated as the demo being gone
                    }
                    // Standard input closed: the demo that started us is gone; do not linger.
                    Runtime.getRuntime().halt(3);
                },
                "demo-worker-stdin");
        reader.setDaemon(true);
        reader.start();
    }

    private static void startWatchdog(long maxRuntimeMs) {
        Thread watchdog = new Thread(
                () -> {
                    try {
                        TimeUnit.MILLISECONDS.sleep(maxRuntimeMs);
                        emit(ERROR + " ran longer than " + maxRuntimeMs + " ms; halting");
                        Runtime.getRuntime().halt(4);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                },
                "demo-worker-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
    }

    private static void emit(String line) {
        synchronized (System.out) {
            System.out.println(line);
            System.out.flush();
        }
    }

    /** The worker's parsed arguments. */
    record Config(
            int port,
            String client,
            @Nullable String lockUri,
            String lockName,
            long orderMinMs,
            long orderMaxMs,
            int holdAt,
            long holdForMs,
            long maxRuntimeMs) {

        static Config parse(String[] args) {
            Map<String, String> values = WorkerArgs.parse(args);
            String orderMs = values.getOrDefault("order-ms", "5-10");
            String[] range = orderMs.split("-", 2);
            long min = number(range[0], "order-ms");
            long max = range.length == 2 ? number(range[1], "order-ms") : min;
            if (max < min) {
                throw new IllegalArgumentException("--order-ms: MAX < MIN in '" + orderMs + "'");
            }
            String client = values.get("client");
            if (client == null || values.get("port") == null) {
                throw new IllegalArgumentException("--port and --client are required");
            }
            return new Config(
                    (int) number(values.get("port"), "port"),
                    client,
                    values.get("lock-uri"),
                    values.getOrDefault("lock-name", "stock"),
                    min,
                    max,
                    (int) number(values.getOrDefault("hold-at", "0"), "hold-at"),
                    number(values.getOrDefault("hold-for-ms", "0"), "hold-for-ms"),
                    number(values.getOrDefault("max-runtime-ms", "120000"), "max-runtime-ms"));
        }

        private static long number(String value, String name) {
            try {
                long parsed = Long.parseLong(value.trim());
                if (parsed < 0) {
                    throw new IllegalArgumentException("--" + name + " must be >= 0, got " + value);
                }
                return parsed;
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("--" + name + " must be a number, got '" + value + "'");
            }
        }
    }
}
