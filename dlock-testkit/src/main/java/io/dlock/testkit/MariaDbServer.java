package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * A MariaDB server process ({@code mariadbd}) on a free loopback port, from the binaries Debian
 * installs ({@code apt-get install mariadb-server}), for tests that need a real database. A missing
 * binary is an {@link IllegalStateException} naming the package; tests never skip.
 *
 * <p>The data directory is made by {@code mariadb-install-db} in a temporary directory; as root the
 * server runs with {@code --user=root} (MariaDB's own switch for that case). Grant tables are on:
 * user {@value #USER} with password {@value #PASSWORD} owns database {@value #DATABASE}, so wrong
 * credentials are refused as in production. The server listens on 127.0.0.1 only, keeps its socket
 * in the temporary directory, and is stopped by its pid.
 *
 * <p>Thread-safety: safe from any thread; lifecycle calls are serialized on this object.
 */
public final class MariaDbServer implements TestServer {

    /*
     * Concurrency: lifecycle calls and `closed` are guarded by `this`; `process` is volatile.
     * Failure: a server that does not become ready is killed before the exception, whose message
     * holds the tail of its error log.
     * Invariants: at most one mariadbd per instance; port and directory never change.
     */

    /** The database the tests use. */
    public static final String DATABASE = "dlock";

    /** The user that owns {@link #DATABASE}. */
    public static final String USER = "dlock";

    /** {@link #USER}'s password. */
    public static final String PASSWORD = "dlock-test-pw";

    /** How long a start may take, before {@link Timing}. */
    public static final Duration START_TIMEOUT = Duration.ofSeconds(60);

    private final int port;
    private final Path dir;
    private final String server;
    private final String client;

    private volatile @Nullable Process process;

    @GuardedBy("this")
    private boolean closed;

    private MariaDbServer(int port, Path dir, String server, String client) {
        this.port = port;
        this.dir = dir;
        this.server = server;
        this.client = client;
    }

    /**
     * Starts a server with {@code innodb_flush_log_at_trx_commit=2} (a kill of the server alone loses
     * nothing the OS has).
     *
     * <p>Blocking: until it accepts connections and the user and database exist, at most {@link
     * #START_TIMEOUT} scaled. Thread-safety: safe. On failure: {@link IllegalStateException} with the
     * reason and the log's tail; nothing is left running.
     *
     * @return the running server
     * @throws IllegalStateException if it cannot be started
     */
    public static MariaDbServer start() {
        String server = find("mariadbd", "/usr/sbin");
        String client = find("mariadb", "/usr/bin");
        String install = find("mariadb-install-db", "/usr/bin");
        Path dir = Reaper.createTempDirectory("dlock-mariadb-");
        MariaDbServer s = new MariaDbServer(FreePorts.loopback(), dir, server, client);
        synchronized (s) {
            try {
                List<String> cmd = new ArrayList<>(List.of(
                        install,
                        "--no-defaults",
                        "--datadir=" + s.data(),
                        "--auth-root-authentication-method=normal",
                        "--skip-test-db"));
                if (root()) {
                    cmd.add("--user=root");
                }
                s.run(cmd, Duration.ofSeconds(120));
                s.launch();
                s.sql("CREATE DATABASE " + DATABASE + "; CREATE USER '" + USER + "'@'127.0.0.1' IDENTIFIED BY '"
                        + PASSWORD + "'; GRANT ALL ON " + DATABASE + ".* TO '" + USER + "'@'127.0.0.1';");
            } catch (RuntimeException e) {
                s.close();
                throw e;
            }
        }
        return s;
    }

    @Override
    public int port() {
        return port;
    }

    /**
     * Returns {@code jdbc:mariadb://127.0.0.1:PORT/dlock?user=dlock&password=…&dlockTable=<namespace>}.
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
     * Returns the plain JDBC URL of {@link #DATABASE}, without credentials.
     *
     * <p>Blocking: never. Thread-safety: safe. On failure: never fails.
     *
     * @return {@code jdbc:mariadb://127.0.0.1:PORT/dlock}
     */
    public String jdbcUrl() {
        return "jdbc:mariadb://127.0.0.1:" + port + "/" + DATABASE;
    }

    /**
     * Returns whether the server process is running.
     *
     * <p>Blocking: never. Thread-safety: safe. On failure: never fails.
     *
     * @return true while it has not exited
     */
    public boolean isAlive() {
        Process p = process;
        return p != null && p.isAlive();
    }

    /**
     * Runs SQL as root with the {@code mariadb} client and returns its tab-separated output.
     *
     * <p>Blocking: until the client exits, at most 30 s. Thread-safety: safe. On failure: {@link
     * IllegalStateException} with the client's output.
     *
     * @param sql one or more statements
     * @return the output, trimmed
     * @throws IllegalStateException if the client fails
     */
    public String sql(String sql) {
        return run(
                List.of(
                        client,
                        "--no-defaults",
                        "-S",
                        dir.resolve("sock").toString(),
                        "-u",
                        "root",
                        "-N",
                        "-B",
                        "-e",
                        sql),
                Duration.ofSeconds(30));
    }

    /**
     * Stops the server (SIGTERM: a clean shutdown) and waits.
     *
     * <p>Blocking: until it has exited, at most 60 s, then SIGKILL. Thread-safety: safe; stopping a
     * stopped server does nothing. On failure: {@link IllegalStateException} if interrupted.
     */
    public synchronized void stop() {
        Process p = process;
        if (p == null || !p.isAlive()) {
            return;
        }
        try {
            p.destroy();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                p.waitFor(30, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(this + ": interrupted while stopping", e);
        }
        Reaper.untrack(p);
    }

    /**
     * Stops the server and starts it again on the same port and data.
     *
     * <p>Blocking: until it accepts connections again. Thread-safety: safe. On failure: {@link
     * IllegalStateException} if closed or it does not start again.
     *
     * @throws IllegalStateException if closed or the restart fails
     */
    @Override
    public synchronized void restart() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        stop();
        launch();
    }

    /**
     * Stops the server and deletes its directory.
     *
     * <p>Blocking: until it has exited. Thread-safety: safe; idempotent. On failure: never throws.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            stop();
        } catch (RuntimeException e) {
            org.slf4j.LoggerFactory.getLogger(MariaDbServer.class).warn("could not stop {}", this, e);
        } finally {
            Reaper.deleteTempDirectory(dir);
        }
    }

    @Override
    public String toString() {
        return "MariaDbServer[" + connectString() + ", " + dir + "]";
    }

    private Path data() {
        return dir.resolve("data");
    }

    private static boolean root() {
        return "root".equals(System.getProperty("user.name"));
    }

    @GuardedBy("this")
    private void launch() {
        List<String> cmd = new ArrayList<>(List.of(
                server,
                "--no-defaults",
                "--datadir=" + data(),
                "--port=" + port,
                "--bind-address=127.0.0.1",
                "--socket=" + dir.resolve("sock"),
                "--pid-file=" + dir.resolve("mariadbd.pid"),
                "--log-error=" + dir.resolve("error.log"),
                "--skip-name-resolve",
                "--innodb-flush-log-at-trx-commit=2",
                "--innodb-buffer-pool-size=64M",
                "--max-connections=300"));
        if (root()) {
            cmd.add("--user=root");
        }
        Process p;
        try {
            p = new ProcessBuilder(cmd)
                    .directory(dir.toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(
                            dir.resolve("stdout.log").toFile()))
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + server, e);
        }
        Reaper.track(p);
        process = p;
        long deadline = System.nanoTime() + Timing.scale(START_TIMEOUT).toNanos();
        while (true) {
            if (!p.isAlive()) {
                Reaper.untrack(p);
                throw new IllegalStateException(this + " exited with " + p.exitValue() + " while starting:" + tail());
            }
            try {
                sql("SELECT 1");
                return;
            } catch (IllegalStateException notYet) {
                // not accepting connections yet
            }
            if (System.nanoTime() - deadline > 0) {
                p.destroyForcibly();
                throw new IllegalStateException(
                        this + " did not accept connections within " + Timing.scale(START_TIMEOUT) + ":" + tail());
            }
            try {
                Thread.sleep(100); // polling a server's readiness, not standing in for a test condition
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                p.destroyForcibly();
                throw new IllegalStateException(this + ": interrupted while starting", e);
            }
        }
    }

    private String run(List<String> command, Duration timeout) {
        try {
            Process p = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .directory(dir.toFile())
                    .start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(this + ": " + command.get(0) + " did not finish in " + timeout);
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException(this + ": " + command.get(0) + " exited " + p.exitValue() + ": " + out);
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + command.get(0), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(this + ": interrupted running " + command.get(0), e);
        }
    }

    private String tail() {
        try {
            List<String> all = Files.readAllLines(dir.resolve("error.log"), StandardCharsets.UTF_8);
            return "\n  " + String.join("\n  ", all.subList(Math.max(0, all.size() - 20), all.size()));
        } catch (IOException e) {
            return "";
        }
    }

    /** A MariaDB binary from the PATH or its Debian directory, or an exception naming the package. */
    static String find(String name, String debianDir) {
        List<String> dirs = new ArrayList<>();
        String path = System.getenv("PATH");
        if (path != null) {
            dirs.addAll(List.of(path.split(File.pathSeparator)));
        }
        dirs.add(debianDir);
        for (String d : dirs) {
            Path candidate = Path.of(d, name);
            if (Files.isExecutable(candidate)) {
                return candidate.toString();
            }
        }
        throw new IllegalStateException(
                name + " not found on the PATH or in " + debianDir + ": the MariaDB tests need a"
                        + " real server. Install one (Debian/Ubuntu: apt-get install mariadb-server)");
    }
}
