package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A PostgreSQL server process on a free loopback port, from the binaries Debian installs under
 * {@code /usr/lib/postgresql/<version>/bin} ({@code apt-get install postgresql}), for tests that need
 * a real database. A missing binary is an {@link IllegalStateException} naming the package; tests
 * never skip.
 *
 * <p>PostgreSQL refuses to run as root. When the test JVM is root (CI), {@code initdb} and {@code
 * postgres} run as {@code nobody:nogroup} through {@code setpriv}, in a temporary directory handed
 * to that user; otherwise as the current user. The server listens on 127.0.0.1 only, keeps its unix
 * socket in the temporary directory, and is stopped by its pid.
 *
 * <p>The cluster has a superuser {@value #SUPERUSER} and a user {@value #USER} with password
 * {@value #PASSWORD} that owns database {@value #DATABASE}; password authentication (SCRAM) is
 * required on TCP, so wrong credentials are refused as in production.
 *
 * <p>Thread-safety: safe from any thread; lifecycle calls are serialized on this object.
 */
public final class PostgresServer extends ServerProcess {

    /** The system property naming the directory of {@code postgres}, {@code initdb} and {@code psql}. */
    public static final String BIN_PROPERTY = "dlock.test.postgresBin";

    /** The database the tests use. */
    public static final String DATABASE = "dlock";

    /** The non-superuser that owns {@link #DATABASE}. */
    public static final String USER = "dlock";

    /** {@link #USER}'s password. */
    public static final String PASSWORD = "dlock-test-pw";

    /** The superuser made by initdb (same password). */
    public static final String SUPERUSER = "postgres";

    /** How long a start may take, before {@link Timing}. */
    public static final Duration START_TIMEOUT = Duration.ofSeconds(60);

    private final int port;
    private final Path bin;
    private final boolean durable;

    private PostgresServer(int port, Path dir, Path bin, boolean durable) {
        super(dir);
        this.port = port;
        this.bin = bin;
        this.durable = durable;
    }

    /**
     * Starts a server for tests: {@code fsync} and {@code synchronous_commit} off (a clean stop or a
     * kill of the server alone still loses nothing: the OS keeps the written pages).
     *
     * <p>Blocking: until it accepts connections and the user and database exist, at most {@link
     * #START_TIMEOUT} scaled. Thread-safety: safe. On failure: {@link IllegalStateException} with the
     * reason and the log's tail; nothing is left running.
     *
     * @return the running server
     * @throws IllegalStateException if it cannot be started
     */
    public static PostgresServer start() {
        return start(false);
    }

    /**
     * Starts a server, with every commit flushed to disk when {@code durable} (for benchmarks that
     * should pay what production pays).
     *
     * <p>Blocking: as {@link #start()}. Thread-safety: safe. On failure: as {@link #start()}.
     *
     * @param durable whether fsync and synchronous commit stay on
     * @return the running server
     * @throws IllegalStateException if it cannot be started
     */
    public static PostgresServer start(boolean durable) {
        Path bin = binDir();
        Path dir = Reaper.createTempDirectory("dlock-postgres-");
        PostgresServer server = new PostgresServer(FreePorts.loopback(), dir, bin, durable);
        synchronized (server) {
            try {
                server.init();
                server.launch();
                server.createUserAndDatabase();
            } catch (RuntimeException e) {
                server.close();
                throw e;
            }
        }
        return server;
    }

    @Override
    public int port() {
        return port;
    }

    /**
     * Returns {@code jdbc:postgresql://127.0.0.1:PORT/dlock?user=dlock&password=…&dlockTable=<namespace>}.
     *
     * <p>Blocking: never. Thread-safety: safe. On failure: {@link IllegalArgumentException} for a
     * namespace that is blank or contains whitespace.
     *
     * @param namespace dlock's table name; one leading {@code '/'} is ignored
     * @return the URI
     * @throws IllegalArgumentException if {@code namespace} is not usable
     */
    @Override
    public String uri(String namespace) {
        String ns = TestServer.checkNamespace(namespace);
        return jdbcUrl() + "?user=" + USER + "&password=" + PASSWORD + "&dlockTable=" + ns;
    }

    /**
     * Returns the plain JDBC URL of {@link #DATABASE}, without credentials (for a connection pool).
     *
     * <p>Blocking: never. Thread-safety: safe. On failure: never fails.
     *
     * @return {@code jdbc:postgresql://127.0.0.1:PORT/dlock}
     */
    public String jdbcUrl() {
        return "jdbc:postgresql://127.0.0.1:" + port + "/" + DATABASE;
    }

    /**
     * Runs SQL with {@code psql} as the superuser on {@link #DATABASE} and returns its unaligned,
     * tuples-only output (fields separated by {@code |}), for inspection and fault injection.
     *
     * <p>Blocking: until psql exits, at most 30 s. Thread-safety: safe. On failure: {@link
     * IllegalStateException} with psql's output.
     *
     * @param sql one or more statements
     * @return the output lines
     * @throws IllegalStateException if psql fails
     */
    public List<String> psql(String sql) {
        String out = run(
                List.of(
                        bin.resolve("psql").toString(),
                        "-X",
                        "-q",
                        "-A",
                        "-t",
                        "-v",
                        "ON_ERROR_STOP=1",
                        "-h",
                        sockets().toString(),
                        "-p",
                        Integer.toString(port),
                        "-U",
                        SUPERUSER,
                        "-d",
                        DATABASE,
                        "-c",
                        sql),
                Duration.ofSeconds(30));
        return out.isEmpty() ? List.of() : List.of(out.split("\n"));
    }

    /**
     * Stops the server with a fast shutdown (SIGINT: sessions are ended, data is kept) and waits.
     *
     * <p>Blocking: until it has exited, at most 30 s, then SIGKILL. Thread-safety: safe; stopping a
     * stopped server does nothing. On failure: {@link IllegalStateException} if it will not exit.
     */
    public void stop() {
        stopWith("INT", Duration.ofSeconds(30));
    }

    /**
     * Starts a stopped server again on the same port and data directory.
     *
     * <p>Blocking: until it accepts connections. Thread-safety: safe. On failure: {@link
     * IllegalStateException} if closed or it does not start; nothing is left running.
     *
     * @throws IllegalStateException if closed, still running, or the start fails
     */
    public synchronized void startAgain() {
        requireOpen();
        if (isAlive()) {
            throw new IllegalStateException(this + " is still running");
        }
        launch();
    }

    @Override
    public String toString() {
        return "PostgresServer[" + connectString() + ", " + dir() + "]";
    }

    /** A restart and a close shut down cleanly (fast shutdown), as an operator's restart does. */
    @Override
    @GuardedBy("this")
    void halt() {
        stop();
    }

    // ---- internals

    private Path data() {
        return dir().resolve("data");
    }

    private Path sockets() {
        return dir().resolve("sock");
    }

    private Path logFile() {
        return dir().resolve("postgres.log");
    }

    private static boolean root() {
        return "root".equals(System.getProperty("user.name"));
    }

    /** The command prefix that drops root: {@code setpriv} to nobody:nogroup. */
    private static List<String> asServerUser(List<String> command) {
        if (!root()) {
            return command;
        }
        List<String> all = new ArrayList<>(
                List.of("setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--reset-env"));
        all.addAll(command);
        return all;
    }

    @GuardedBy("this")
    private void init() {
        try {
            Files.createDirectories(sockets());
            Path pw = dir().resolve("pwfile");
            Files.writeString(pw, PASSWORD + "\n", StandardCharsets.UTF_8);
            if (root()) {
                // The temp directory is root's and 0700: hand the whole tree to the server's user.
                run(List.of("chown", "-R", "nobody:nogroup", dir().toString()), Duration.ofSeconds(30));
            }
            run(
                    asServerUser(List.of(
                            bin.resolve("initdb").toString(),
                            "-D",
                            data().toString(),
                            "-U",
                            SUPERUSER,
                            "--pwfile=" + pw,
                            "--auth-local=trust",
                            "--auth-host=scram-sha-256",
                            "-E",
                            "UTF8",
                            "--locale=C",
                            "--no-sync")),
                    Duration.ofSeconds(120));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot prepare " + dir(), e);
        }
    }

    @Override
    @GuardedBy("this")
    void launch() {
        List<String> cmd = new ArrayList<>(List.of(
                bin.resolve("postgres").toString(),
                "-D",
                data().toString(),
                "-p",
                Integer.toString(port),
                "-k",
                sockets().toString(),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "max_connections=200",
                "-c",
                "shared_buffers=32MB",
                "-c",
                "logging_collector=off"));
        if (!durable) {
            cmd.addAll(List.of("-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"));
        }
        Process p = spawn(asServerUser(cmd), logFile());
        awaitReady(
                p,
                Timing.scale(START_TIMEOUT),
                Duration.ofMillis(50),
                "accept connections",
                this::ready,
                logFile(),
                "");
    }

    private boolean ready() {
        try {
            Process probe = new ProcessBuilder(
                            bin.resolve("pg_isready").toString(), "-q", "-h", "127.0.0.1", "-p", Integer.toString(port))
                    .redirectErrorStream(true)
                    .start();
            probe.getInputStream().readAllBytes();
            return probe.waitFor(10, TimeUnit.SECONDS) && probe.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @GuardedBy("this")
    private void createUserAndDatabase() {
        run(
                List.of(
                        bin.resolve("psql").toString(),
                        "-X",
                        "-q",
                        "-v",
                        "ON_ERROR_STOP=1",
                        "-h",
                        sockets().toString(),
                        "-p",
                        Integer.toString(port),
                        "-U",
                        SUPERUSER,
                        "-d",
                        "postgres",
                        "-c",
                        "CREATE USER " + USER + " PASSWORD '" + PASSWORD + "'",
                        "-c",
                        "CREATE DATABASE " + DATABASE + " OWNER " + USER),
                Duration.ofSeconds(30));
    }

    private String run(List<String> command, Duration timeout) {
        return runTool(command, timeout, Map.of("PGPASSWORD", PASSWORD, "LC_ALL", "C"));
    }

    /** The directory of the PostgreSQL binaries, or an exception naming the Debian package. */
    static Path binDir() {
        String configured = System.getProperty(BIN_PROPERTY);
        if (configured == null || configured.isBlank()) {
            configured = System.getenv("DLOCK_POSTGRES_BIN");
        }
        if (configured != null && !configured.isBlank()) {
            Path p = Path.of(configured);
            if (!Files.isExecutable(p.resolve("postgres"))) {
                throw new IllegalStateException("no executable postgres in '" + configured + "' (from -D" + BIN_PROPERTY
                        + " or DLOCK_POSTGRES_BIN)");
            }
            return p;
        }
        Path root = Path.of("/usr/lib/postgresql");
        if (Files.isDirectory(root)) {
            try (Stream<Path> versions = Files.list(root)) {
                var found = versions.map(v -> v.resolve("bin"))
                        .filter(b ->
                                Files.isExecutable(b.resolve("postgres")) && Files.isExecutable(b.resolve("initdb")))
                        .max(Comparator.comparing(PostgresServer::version));
                if (found.isPresent()) {
                    return found.get();
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot list " + root, e);
            }
        }
        throw new IllegalStateException("PostgreSQL not found under /usr/lib/postgresql/*/bin: the SQL tests need a"
                + " real server. Install one (Debian/Ubuntu: apt-get install postgresql) or point -D" + BIN_PROPERTY
                + "=/path/to/bin at its binaries");
    }

    private static int version(Path bin) {
        try {
            Path dir = bin.getParent();
            Path version = dir == null ? null : dir.getFileName();
            return version == null ? 0 : Integer.parseInt(version.toString().replaceAll("\\D.*", ""));
        } catch (NumberFormatException e) {
            return 0;
        }
    }
}
