package io.dlock.cli.internal.torture;

import io.dlock.DistributedLock;
import io.dlock.DistributedReadWriteLock;
import io.dlock.DistributedSemaphore;
import io.dlock.LeaderElection;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.cli.internal.WorkerArgs;
import io.dlock.testkit.FencedStoreServer;
import io.dlock.testkit.OccupancyStore;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Function;

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
 * happens. Optional: {@code --primitive} ({@link Primitive}: exclusive by default), {@code
 * --read-percent} (read-write: the share of read grants), {@code --permits} (semaphore); for a
 * multi-lock {@code --lock} and {@code --store-port} are comma-separated lists, one store per part;
 * {@code --check-valid true} checks {@code isValid()} right before each write and skips it ({@code
 * SKIPPED <token>}) when the lease is no longer valid.
 *
 * <p>An election ({@code --primitive election}): the worker is one candidate of the election
 * {@code --lock}; while it holds a valid term it read-modify-writes the store with the term number,
 * cycle after cycle, and stops writing when the term ends (it checks its leadership before each
 * cycle, never between the read and the write); the election rejoins by itself. It prints {@code
 * ELECTED <term> <nanoTime>} before its first cycle in each term and {@code REVOKED <term>} when the
 * term ends. Anchor libraries' elections do the same ({@link #runAnchorElection}).
 *
 * <p>Shared primitives (read-write, semaphore) enter the store's occupancy checker with their
 * token before their work ({@code REFUSED enter} when it refuses them as stale, {@code VIOLATION}
 * when it admitted them against the rule) and leave it after ({@code REFUSED leave} when a newer
 * holder had fenced them out).
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
    static final String VIOLATION = "VIOLATION";
    static final String SKIPPED = "SKIPPED";
    static final String ELECTED = "ELECTED";
    static final String REVOKED = "REVOKED";

    private static final long ERROR_BACKOFF_MS = 50;
    /** How long a candidate waits for leadership before it looks at {@code STOP} again. */
    private static final Duration LEADERSHIP_POLL = Duration.ofMillis(250);

    private static volatile boolean stop;
    private static final AtomicLong holdMs = new AtomicLong();
    private static volatile boolean checkValid;

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
        start(args, TortureWorker::run);
    }

    /**
     * A lock of another library, taken by an anchor worker (in dlock-benchmarks) in the same loop
     * and protocol as dlock's, for comparison (issue 17 item 6). Used from the worker's one loop
     * thread only.
     */
    public interface AnchorLock extends AutoCloseable {
        /**
         * Tries to take the lock.
         *
         * @param wait the longest wait
         * @return the grant, or empty if it was not granted within {@code wait}
         * @throws Exception whatever the library throws (counted as a failed operation)
         */
        Optional<AnchorLease> tryAcquire(Duration wait) throws Exception;

        /** Closes the library's client; never throws. */
        @Override
        void close();
    }

    /** One grant of an {@link AnchorLock}. */
    public interface AnchorLease {
        /** A number that rises with every grant, used only to tell which write was stale. */
        long token();

        /** The check a careful user of the library makes right before writing. */
        boolean stillHeld();

        /**
         * Releases the grant.
         *
         * @throws Exception whatever the library throws (counted as a failed operation)
         */
        void release() throws Exception;
    }

    /**
     * Runs an anchor library's worker: the same options, input and output as {@link #main}, with
     * {@code open} making the lock from the options ({@code --uri}, {@code --lock}); only the
     * exclusive primitive. {@code --check-valid true} asks {@link AnchorLease#stillHeld()} before
     * each write.
     *
     * <p>Blocking: as {@link #main}. Thread-safety: a process entry point. On failure: as {@link
     * #main}.
     *
     * @param args {@code --name value} pairs
     * @param open makes the lock (and its client) from the parsed options
     */
    public static void runAnchor(String[] args, Function<Map<String, String>, AnchorLock> open) {
        Objects.requireNonNull(open, "open");
        start(args, o -> runAnchor(o, open));
    }

    /**
     * A leader election of another library, joined by an anchor worker (in dlock-benchmarks) for
     * {@code --primitive election}. Used from the worker's one loop thread; the library elects on
     * its own threads.
     */
    public interface AnchorElection extends AutoCloseable {
        /**
         * Waits for this candidate to lead.
         *
         * @param wait the longest wait
         * @return the current term, or empty if this candidate did not lead within {@code wait}
         * @throws Exception whatever the library throws (counted as a failed operation)
         */
        Optional<AnchorTerm> awaitLeadership(Duration wait) throws Exception;

        /** Leaves the election and closes the library's client; never throws. */
        @Override
        void close();
    }

    /** One term of an {@link AnchorElection}. */
    public interface AnchorTerm {
        /** The number the writes of this term carry: rises with every term, if the library has one. */
        long token();

        /** Whether the library still calls this candidate the leader of this term. */
        boolean stillHeld();
    }

    /**
     * Runs an anchor library's candidate for {@code --primitive election}: the same options, input
     * and output as {@link #main}, with {@code open} joining the election from the options ({@code
     * --uri}, {@code --lock}).
     *
     * <p>Blocking: as {@link #main}. Thread-safety: a process entry point. On failure: as {@link
     * #main}.
     *
     * @param args {@code --name value} pairs
     * @param open joins the election (and makes the library's client) from the parsed options
     */
    public static void runAnchorElection(String[] args, Function<Map<String, String>, AnchorElection> open) {
        Objects.requireNonNull(open, "open");
        start(args, o -> {
            if (Primitive.parse(o.getOrDefault("primitive", Primitive.ELECTION.cliName())) != Primitive.ELECTION) {
                throw new IllegalArgumentException("an anchor election worker takes --primitive election only");
            }
            Counters c = new Counters();
            try (FencedStoreServer.Client store = FencedStoreServer.Client.connect(
                            storeHost(o), Integer.parseInt(required(o, "store-port")), required(o, "client"));
                    AnchorElection election = open.apply(o)) {
                startStdinReader();
                emit(READY);
                lead(election::awaitLeadership, store, Long.parseLong(o.get("work-ms")), c);
            }
            emit(DONE + " " + c.operations + " " + c.writes + " " + c.refused + " " + c.errors);
        });
    }

    /**
     * Prints {@code LOST <token>}: an anchor library told its user the grant is gone.
     *
     * @param token the grant's token
     */
    public static void lost(long token) {
        emit(LOST + " " + token);
    }

    private static void start(String[] args, Consumer<Map<String, String>> body) {
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
            body.accept(options);
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
        Primitive primitive = Primitive.parse(o.getOrDefault("primitive", Primitive.EXCLUSIVE.cliName()));
        Duration wait = Duration.ofMillis(Long.parseLong(o.get("wait-ms")));
        long workMs = Long.parseLong(o.get("work-ms"));
        int readPercent = Integer.parseInt(o.getOrDefault("read-percent", "50"));
        int permits = Integer.parseInt(o.getOrDefault("permits", "1"));
        checkValid = Boolean.parseBoolean(o.getOrDefault("check-valid", "false"));
        List<String> lockNames = List.of(required(o, "lock").split(","));
        List<Integer> ports = new ArrayList<>();
        for (String port : required(o, "store-port").split(",")) {
            ports.add(Integer.parseInt(port));
        }
        if (primitive == Primitive.MULTI ? ports.size() != lockNames.size() : ports.size() != 1) {
            throw new IllegalArgumentException("--store-port needs one port per lock name (multi) or one port");
        }
        Counters c = new Counters();
        List<FencedStoreServer.Client> stores = new ArrayList<>();
        try (LockClient client = LockClient.connect(required(o, "uri"))) {
            for (int port : ports) {
                stores.add(FencedStoreServer.Client.connect(storeHost(o), port, name));
            }
            if (primitive == Primitive.ELECTION) {
                runElection(client, lockNames.get(0), stores.get(0), workMs, c);
                emit(DONE + " " + c.operations + " " + c.writes + " " + c.refused + " " + c.errors);
                return;
            }
            DistributedLock exclusive = null;
            DistributedReadWriteLock rw = null;
            DistributedSemaphore semaphore = null;
            switch (primitive) {
                case EXCLUSIVE -> exclusive = client.lock(lockNames.get(0));
                case READ_WRITE -> rw = client.readWriteLock(lockNames.get(0));
                case SEMAPHORE -> semaphore = client.semaphore(lockNames.get(0), permits);
                case MULTI -> exclusive = client.multiLock(lockNames);
                case ELECTION -> throw new IllegalStateException("an election is run by runElection");
            }
            startStdinReader();
            emit(READY);
            while (!stop) {
                boolean read = rw != null && ThreadLocalRandom.current().nextInt(100) < readPercent;
                Optional<Lease> acquired;
                try {
                    if (rw != null) {
                        acquired = (read ? rw.readLock() : rw.writeLock()).tryAcquire(wait);
                    } else if (semaphore != null) {
                        acquired = semaphore.tryAcquire(1, wait);
                    } else {
                        acquired = Objects.requireNonNull(exclusive).tryAcquire(wait);
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted", e);
                } catch (RuntimeException e) {
                    c.errors++;
                    emit(ERROR + " acquire: " + oneLine(e));
                    sleep(ERROR_BACKOFF_MS);
                    continue;
                }
                if (acquired.isEmpty()) {
                    emit(TIMEOUT);
                    continue;
                }
                c.operations++;
                try (Lease lease = acquired.get()) {
                    long token = lease.fencingToken();
                    lease.onLost(e -> emit(LOST + " " + token));
                    switch (primitive) {
                        case EXCLUSIVE -> readModifyWrite(stores.get(0), lease::isValid, token, workMs, c);
                        case READ_WRITE -> shared(
                                stores.get(0),
                                lease,
                                token,
                                read ? OccupancyStore.Mode.READ : OccupancyStore.Mode.WRITE,
                                workMs,
                                c);
                        case SEMAPHORE -> shared(stores.get(0), lease, token, OccupancyStore.Mode.PERMITS, workMs, c);
                        case MULTI -> multi(client, lockNames, stores, lease, workMs, c);
                        case ELECTION -> throw new IllegalStateException("an election is run by runElection");
                    }
                } catch (RuntimeException e) {
                    c.errors++;
                    emit(ERROR + " " + oneLine(e));
                    sleep(ERROR_BACKOFF_MS);
                }
            }
        } finally {
            stores.forEach(FencedStoreServer.Client::close);
        }
        emit(DONE + " " + c.operations + " " + c.writes + " " + c.refused + " " + c.errors);
    }

    private static void runAnchor(Map<String, String> o, Function<Map<String, String>, AnchorLock> open) {
        String name = required(o, "client");
        if (Primitive.parse(o.getOrDefault("primitive", Primitive.EXCLUSIVE.cliName())) != Primitive.EXCLUSIVE) {
            throw new IllegalArgumentException("an anchor worker takes an exclusive lock only");
        }
        Duration wait = Duration.ofMillis(Long.parseLong(o.get("wait-ms")));
        long workMs = Long.parseLong(o.get("work-ms"));
        checkValid = Boolean.parseBoolean(o.getOrDefault("check-valid", "false"));
        Counters c = new Counters();
        try (FencedStoreServer.Client store = FencedStoreServer.Client.connect(
                        storeHost(o), Integer.parseInt(required(o, "store-port")), name);
                AnchorLock lock = open.apply(o)) {
            startStdinReader();
            emit(READY);
            while (!stop) {
                Optional<AnchorLease> acquired;
                try {
                    acquired = lock.tryAcquire(wait);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted", e);
                } catch (Exception e) {
                    c.errors++;
                    emit(ERROR + " acquire: " + oneLine(e));
                    sleep(ERROR_BACKOFF_MS);
                    continue;
                }
                if (acquired.isEmpty()) {
                    emit(TIMEOUT);
                    continue;
                }
                c.operations++;
                AnchorLease lease = acquired.get();
                try {
                    readModifyWrite(store, lease::stillHeld, lease.token(), workMs, c);
                } catch (RuntimeException e) {
                    c.errors++;
                    emit(ERROR + " " + oneLine(e));
                }
                try {
                    lease.release();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted", e);
                } catch (Exception e) {
                    c.errors++;
                    emit(ERROR + " release: " + oneLine(e));
                    sleep(ERROR_BACKOFF_MS);
                }
            }
        }
        emit(DONE + " " + c.operations + " " + c.writes + " " + c.refused + " " + c.errors);
    }

    /** A candidate's wait for leadership: dlock's {@code awaitLeadership}, or an anchor's. */
    private interface Leadership {
        Optional<AnchorTerm> await(Duration wait) throws Exception;
    }

    /** dlock's election: one candidate of {@code name}, left when the loop ends. */
    private static void runElection(
            LockClient client, String name, FencedStoreServer.Client store, long workMs, Counters c) {
        try (LeaderElection election = client.leaderElection(name)
                .onRevoked(term -> emit(REVOKED + " " + term.fencingToken()))
                .start()) {
            startStdinReader();
            emit(READY);
            lead(
                    wait -> election.awaitLeadership(wait).map(term -> new AnchorTerm() {
                        @Override
                        public long token() {
                            return term.fencingToken();
                        }

                        @Override
                        public boolean stillHeld() {
                            return term.isValid();
                        }
                    }),
                    store,
                    workMs,
                    c);
        }
    }

    /**
     * A candidate's loop until {@code STOP}: while it leads, read-modify-write cycles with the term's
     * number; {@code ELECTED} before the first cycle of each term. Leadership is asked before each
     * cycle, never between its read and its write (the worst case, as for locks).
     */
    private static void lead(Leadership leadership, FencedStoreServer.Client store, long workMs, Counters c) {
        long current = Long.MIN_VALUE;
        while (!stop) {
            Optional<AnchorTerm> term;
            try {
                term = leadership.await(LEADERSHIP_POLL);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            } catch (Exception e) {
                c.errors++;
                emit(ERROR + " leadership: " + oneLine(e));
                sleep(ERROR_BACKOFF_MS);
                continue;
            }
            if (term.isEmpty()) {
                continue;
            }
            AnchorTerm t = term.get();
            if (t.token() != current) {
                current = t.token();
                emit(ELECTED + " " + current + " " + System.nanoTime());
            }
            c.operations++;
            try {
                if (!readModifyWrite(store, t::stillHeld, t.token(), workMs, c)) {
                    sleep(ERROR_BACKOFF_MS); // refused: the term is over, whatever the library says yet
                }
            } catch (RuntimeException e) {
                c.errors++;
                emit(ERROR + " " + oneLine(e));
                sleep(ERROR_BACKOFF_MS);
            }
        }
    }

    /**
     * Prints {@code REVOKED <term>}: an anchor library told its candidate the term is over.
     *
     * @param term the term's number
     */
    public static void revoked(long term) {
        emit(REVOKED + " " + term);
    }

    /** What one worker did, for its DONE line. */
    private static final class Counters {
        long operations;
        long writes;
        long refused;
        long errors;
    }

    /** Reads the value with the token, works (or holds), writes it plus one; false if refused. */
    private static boolean readModifyWrite(
            FencedStoreServer.Client store, BooleanSupplier valid, long token, long workMs, Counters c) {
        OptionalLong value = store.read(token);
        if (value.isEmpty()) {
            c.refused++;
            emit(REFUSED + " read " + token + " " + valid.getAsBoolean());
            return false;
        }
        work(token, workMs);
        if (checkValid && !valid.getAsBoolean()) {
            emit(SKIPPED + " " + token);
            return false;
        }
        if (store.write(token, value.getAsLong() + 1)) {
            c.writes++;
            return true;
        }
        c.refused++;
        emit(REFUSED + " write " + token + " " + valid.getAsBoolean());
        return false;
    }

    private static void work(long token, long workMs) {
        long hold = holdMs.getAndSet(0);
        if (hold > 0) {
            emit(HOLDING + " " + token);
            sleep(hold);
        } else if (workMs > 0) {
            sleep(ThreadLocalRandom.current().nextLong(workMs / 2, workMs + 1));
        }
    }

    /**
     * A shared primitive's critical section: enter the occupancy store, then a writer
     * read-modify-writes the fenced value, a reader only works, a semaphore holder read-modify-writes
     * the (unfenced) journal so the run sees its sections; then leave.
     */
    private static void shared(
            FencedStoreServer.Client store,
            Lease lease,
            long token,
            OccupancyStore.Mode mode,
            long workMs,
            Counters c) {
        OccupancyStore.Admission admission = store.enter(token, mode, 1);
        if (admission == OccupancyStore.Admission.STALE) {
            c.refused++;
            emit(REFUSED + " enter " + token + " " + lease.isValid());
            return;
        }
        if (admission != OccupancyStore.Admission.ADMITTED) {
            emit(VIOLATION + " " + mode + " " + token + " " + admission);
        }
        if (mode == OccupancyStore.Mode.READ) {
            work(token, workMs);
            c.writes++;
        } else if (!readModifyWrite(store, lease::isValid, token, workMs, c)) {
            store.leave(token);
            return;
        }
        if (store.leave(token) == OccupancyStore.Exit.STALE) {
            c.refused++;
            emit(REFUSED + " leave " + token + " " + lease.isValid());
        }
    }

    /**
     * A multi-lock's critical section: each part's token comes from re-entering that part on this
     * thread (a re-entry shares the multi-lease's grant of the part; the API gives the multi-lease
     * only the highest token), then each part's store is read-modified-written with its own token.
     */
    private static void multi(
            LockClient client,
            List<String> names,
            List<FencedStoreServer.Client> stores,
            Lease lease,
            long workMs,
            Counters c) {
        long[] tokens = new long[names.size()];
        for (int i = 0; i < names.size(); i++) {
            Optional<Lease> part;
            try {
                part = client.lock(names.get(i)).tryAcquire(Duration.ZERO);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", e);
            }
            if (part.isEmpty()) {
                throw new IllegalStateException("part " + names.get(i) + " of the multi-lock is no longer held");
            }
            try (Lease p = part.get()) {
                tokens[i] = p.fencingToken();
            }
        }
        for (int i = 0; i < names.size(); i++) {
            if (!readModifyWrite(stores.get(i), lease::isValid, tokens[i], i == 0 ? workMs : 0, c)) {
                return;
            }
        }
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
        String storePorts = required(values, "store-port");
        for (String port : storePorts.split(",", -1)) {
            try {
                if (Integer.parseInt(port) < 0) {
                    throw new NumberFormatException();
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "--store-port must be ports >= 0, comma-separated, got '" + storePorts + "'");
            }
        }
        String primitive = values.get("primitive");
        if (primitive != null) {
            Primitive.parse(primitive);
        }
        for (String number : new String[] {"wait-ms", "work-ms", "max-runtime-ms", "read-percent", "permits"}) {
            if (!values.containsKey(number)) {
                continue;
            }
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
