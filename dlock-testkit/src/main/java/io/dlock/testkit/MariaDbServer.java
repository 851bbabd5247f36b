package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

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
public final class MariaDbServer extends ServerProcess {

    /** The database the tests use. */
    public static final String DATABASE = "dlock";

    /** The user that owns {@link #DATABASE}. */
    public static final String USER = "dlock";

    /** {@link #USER}'s password. */
    public static final String PASSWORD = "dlock-test-pw";

    /** How long a start may take, before {@link Timing}. */
    public static final Duration START_TIMEOUT = Duration.ofSeconds(60);

    private final int port;
    private final String server;
    private final String client;

    private MariaDbServer(int port, Path dir, String server, String client) {
        super(dir);
        this.port = port;
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
                        dir().resolve("sock").toString(),
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
    public void stop() {
        stopWith("TERM", Duration.ofSeconds(60));
    }

    @Override
    public String toString() {
        return "MariaDbServer[" + connectString() + ", " + dir() + "]";
    }

    /** A restart and a close shut down cleanly (SIGTERM), as an operator's restart does. */
    @Override
    @GuardedBy("this")
    void halt() {
        stop();
    }

    private Path data() {
        return dir().resolve("data");
    }

    private static boolean root() {
        return "root".equals(System.getProperty("user.name"));
    }

    @Override
    @GuardedBy("this")
    void launch() {
        List<String> cmd = new ArrayList<>(List.of(
                server,
                "--no-defaults",
                "--datadir=" + data(),
                "--port=" + port,
                "--bind-address=127.0.0.1",
                "--socket=" + dir().resolve("sock"),
                "--pid-file=" + dir().resolve("mariadbd.pid"),
                "--log-error=" + dir().resolve("error.log"),
                "--skip-name-resolve",
                "--innodb-flush-log-at-trx-commit=2",
                "--innodb-buffer-pool-size=64M",
                "--max-connections=300"));
        if (root()) {
            cmd.add("--user=root");
        }
        Process p = spawn(cmd, dir().resolve("stdout.log"));
        awaitReady(
                p,
                Timing.scale(START_TIMEOUT),
                Duration.ofMillis(100),
                "accept connections",
                this::answers,
                dir().resolve("error.log"),
                "");
    }

    private boolean answers() {
        try {
            sql("SELECT 1");
            return true;
        } catch (IllegalStateException notYet) {
            return false;
        }
    }

    private String run(List<String> command, Duration timeout) {
        return runTool(command, timeout, Map.of());
    }

    /** A MariaDB binary from the PATH or its Debian directory, or an exception naming the package. */
    static String find(String name, String debianDir) {
        return binary(name, null, null, "mariadb-server", debianDir);
    }
}
