package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * An {@code etcd} process (one member, or one member of an {@link EtcdCluster}) on free loopback
 * client and peer ports, started from the binary installed on the machine (Debian: {@code apt-get
 * install etcd-server}), for tests that need a real etcd.
 *
 * <p>The binary is, in order: the system property {@value #BINARY_PROPERTY}, the environment
 * variable {@code DLOCK_ETCD}, or {@code etcd} on the {@code PATH}. A missing binary is an {@link
 * IllegalStateException} that says how to install one; tests never skip.
 *
 * <p>Data lives in a temporary directory of its own and survives {@link #kill()} and {@link
 * #restart()} (etcd syncs its write-ahead log before it acknowledges a write).
 *
 * <p>Thread-safety: safe from any thread; lifecycle calls are serialized on this object.
 */
public final class EtcdServer implements TestServer {

    /*
     * Concurrency: lifecycle calls and `closed` are guarded by `this`; `process` is volatile so
     * that read-only calls do not wait behind a restart.
     * Failure: a process that does not report healthy in time is killed before the exception is
     * thrown, with the tail of its log in the message.
     * Invariants: at most one process per instance is alive; ports and directory never change.
     */

    /** The system property naming the {@code etcd} binary. */
    public static final String BINARY_PROPERTY = "dlock.test.etcd";

    /** How long a start may take until the member reports healthy, before {@link Timing}. */
    public static final Duration START_TIMEOUT = Duration.ofSeconds(30);

    private final String name;
    private final int clientPort;
    private final int peerPort;
    private final Path dir;
    /** {@code --initial-cluster}: every member's name and peer URL. */
    private final String initialCluster;

    private final String clusterToken;
    /** Whether a start waits for /health (a lone member of a cluster has no quorum to be healthy). */
    private final boolean waitHealthy;

    private volatile @Nullable Process process;

    @GuardedBy("this")
    private boolean closed;

    EtcdServer(
            String name,
            int clientPort,
            int peerPort,
            Path dir,
            String initialCluster,
            String clusterToken,
            boolean waitHealthy) {
        this.name = name;
        this.clientPort = clientPort;
        this.peerPort = peerPort;
        this.dir = dir;
        this.initialCluster = initialCluster;
        this.clusterToken = clusterToken;
        this.waitHealthy = waitHealthy;
    }

    /**
     * Starts a single-member etcd.
     *
     * <p>Blocking: until it reports healthy, at most {@link #START_TIMEOUT} scaled by {@link
     * Timing}. Thread-safety: safe from any thread. On failure: {@link IllegalStateException} naming
     * the reason (binary missing, did not start) with the log's tail; nothing is left running.
     *
     * @return the running server
     * @throws IllegalStateException if it cannot be started
     */
    public static EtcdServer start() {
        String binary = binary(); // fail before creating anything
        int client = FreePorts.loopback();
        int peer = FreePorts.loopback();
        Path dir = Reaper.createTempDirectory("dlock-etcd-");
        EtcdServer server =
                new EtcdServer("n0", client, peer, dir, "n0=http://127.0.0.1:" + peer, "dlock-" + client, true);
        synchronized (server) {
            try {
                server.launch(binary);
            } catch (RuntimeException e) {
                server.close();
                throw e;
            }
        }
        return server;
    }

    @Override
    public int port() {
        return clientPort;
    }

    /**
     * Returns the member's peer port.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return the port peers connect to
     */
    public int peerPort() {
        return peerPort;
    }

    /**
     * Returns the member's name in the cluster.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return for example {@code n0}
     */
    public String name() {
        return name;
    }

    /**
     * Returns {@code etcd://127.0.0.1:PORT/<namespace>}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalArgumentException} for a blank namespace or one with whitespace.
     *
     * @param namespace the key prefix for dlock's keys; one leading {@code '/'} is ignored
     * @return the URI as a string
     * @throws IllegalArgumentException if {@code namespace} is blank or contains whitespace
     */
    @Override
    public String uri(String namespace) {
        return "etcd://" + connectString() + "/" + TestServer.checkNamespace(namespace);
    }

    /**
     * Returns the pid of the current process (a new one after each {@link #restart()}).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return the pid
     */
    public long pid() {
        return running().pid();
    }

    /**
     * Returns the member's working directory (data and log).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return the directory
     */
    public Path dir() {
        return dir;
    }

    /**
     * Returns whether the member answers {@code /health} with {@code "health":"true"} (it is up and
     * its cluster has a leader).
     *
     * <p>Blocking: one HTTP round trip, at most 1 s. Thread-safety: safe from any thread. On
     * failure: false.
     *
     * @return true if healthy
     */
    public boolean isHealthy() {
        return health(clientPort, Duration.ofSeconds(1));
    }

    /**
     * Kills the member with SIGKILL and waits for it to exit.
     *
     * <p>Blocking: until the process has exited, at most 30 s. Thread-safety: safe from any thread;
     * killing a dead member does nothing. On failure: {@link IllegalStateException} if it does not
     * exit.
     *
     * @throws IllegalStateException if the process does not exit
     */
    public synchronized void kill() {
        Process p = process;
        if (p == null || !p.isAlive()) {
            return;
        }
        p.destroyForcibly();
        try {
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException(this + " did not exit within 30 s of SIGKILL");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(this + ": interrupted while killing", e);
        }
        Reaper.untrack(p);
    }

    /**
     * Freezes the member with SIGSTOP: connections stay open but nothing is answered.
     *
     * <p>Blocking: until the signal is sent. Thread-safety: safe from any thread. On failure:
     * {@link IllegalStateException} if the signal fails.
     */
    public synchronized void pause() {
        Reaper.signal(running().pid(), "STOP");
    }

    /**
     * Lets a paused member run again with SIGCONT.
     *
     * <p>Blocking: until the signal is sent. Thread-safety: safe from any thread. On failure:
     * {@link IllegalStateException} if the signal fails.
     */
    public synchronized void resume() {
        Reaper.signal(running().pid(), "CONT");
    }

    /**
     * Returns whether the process is running (a paused one counts as running).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return true while the process has not exited
     */
    public boolean isAlive() {
        Process p = process;
        return p != null && p.isAlive();
    }

    /**
     * Kills the member with SIGKILL if it is alive and starts a new process on the same ports and
     * data directory; every acknowledged write survives.
     *
     * <p>Blocking: until it reports healthy (a single member) or runs (a cluster member), at most
     * {@link #START_TIMEOUT} scaled by {@link Timing}. Thread-safety: safe from any thread. On
     * failure: {@link IllegalStateException} if closed or it does not serve in time; no process is
     * left running.
     *
     * @throws IllegalStateException if closed or the restart fails
     */
    @Override
    public synchronized void restart() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        kill();
        launch(binary());
    }

    /**
     * Kills the process and deletes its directory.
     *
     * <p>Blocking: until the process has exited. Thread-safety: safe from any thread; idempotent.
     * On failure: never throws; problems are logged.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            kill();
        } catch (RuntimeException e) {
            org.slf4j.LoggerFactory.getLogger(EtcdServer.class).warn("could not stop {}", this, e);
        } finally {
            Reaper.deleteTempDirectory(dir);
        }
    }

    @Override
    public String toString() {
        return "EtcdServer[" + name + ", " + connectString() + ", peer " + peerPort + ", " + dir + "]";
    }

    /** Starts the process; waits for health if {@link #waitHealthy}, else only that it stays up. */
    synchronized void launch(String binary) {
        Path logFile = dir.resolve("etcd.log");
        String peerUrl = "http://127.0.0.1:" + peerPort;
        String clientUrl = "http://127.0.0.1:" + clientPort;
        List<String> cmd = List.of(
                binary,
                "--name",
                name,
                "--data-dir",
                dir.resolve("data").toString(),
                "--listen-client-urls",
                clientUrl,
                "--advertise-client-urls",
                clientUrl,
                "--listen-peer-urls",
                peerUrl,
                "--initial-advertise-peer-urls",
                peerUrl,
                "--initial-cluster",
                initialCluster,
                "--initial-cluster-token",
                clusterToken,
                "--initial-cluster-state",
                "new",
                "--heartbeat-interval",
                "100",
                "--election-timeout",
                "1000",
                "--enable-v2=false",
                "--logger",
                "zap",
                "--log-outputs",
                "stderr");
        Process p;
        try {
            p = new ProcessBuilder(cmd)
                    .directory(dir.toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()))
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + binary, e);
        }
        Reaper.track(p);
        process = p;
        if (!waitHealthy) {
            return;
        }
        awaitHealthy(p, logFile);
    }

    /** Waits until /health says true; kills the process and throws if it does not in time. */
    void awaitHealthy(Process p, Path logFile) {
        Duration timeout = Timing.scale(START_TIMEOUT);
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!health(clientPort, Duration.ofMillis(500))) {
            if (!p.isAlive() || System.nanoTime() - deadline > 0) {
                String why = p.isAlive() ? "did not report healthy within " + timeout : "exited with " + p.exitValue();
                p.destroyForcibly();
                Reaper.untrack(p);
                throw new IllegalStateException(this + " " + why + tail(logFile));
            }
            try {
                Thread.sleep(50); // polls readiness; etcd offers no start-up callback
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                p.destroyForcibly();
                throw new IllegalStateException(this + ": interrupted while starting", e);
            }
        }
    }

    Path logFile() {
        return dir.resolve("etcd.log");
    }

    static boolean health(int port, Duration timeout) {
        HttpURLConnection c = null;
        try {
            c = (HttpURLConnection) new URL("http://127.0.0.1:" + port + "/health").openConnection();
            c.setConnectTimeout((int) timeout.toMillis());
            c.setReadTimeout((int) timeout.toMillis());
            if (c.getResponseCode() != 200) {
                return false;
            }
            try (InputStream in = c.getInputStream()) {
                String body = new String(in.readAllBytes(), StandardCharsets.UTF_8);
                return body.replace(" ", "").contains("\"health\":\"true\"");
            }
        } catch (IOException e) {
            return false;
        } finally {
            if (c != null) {
                c.disconnect();
            }
        }
    }

    static String tail(Path logFile) {
        try {
            List<String> all = Files.readAllLines(logFile, StandardCharsets.UTF_8);
            return "\n  "
                    + all.subList(Math.max(0, all.size() - 20), all.size()).stream()
                            .collect(Collectors.joining("\n  "));
        } catch (IOException e) {
            return "";
        }
    }

    /** The etcd binary, or an exception saying how to get one. */
    static String binary() {
        String configured = System.getProperty(BINARY_PROPERTY);
        if (configured == null || configured.isBlank()) {
            configured = System.getenv("DLOCK_ETCD");
        }
        if (configured != null && !configured.isBlank()) {
            if (!Files.isExecutable(Path.of(configured))) {
                throw new IllegalStateException("etcd '" + configured + "' (from -D" + BINARY_PROPERTY
                        + " or DLOCK_ETCD) is not an executable file");
            }
            return configured;
        }
        String path = System.getenv("PATH");
        List<String> dirs = new ArrayList<>(path == null ? List.of() : List.of(path.split(File.pathSeparator)));
        dirs.add("/usr/bin");
        for (String d : dirs) {
            Path candidate = Path.of(d, "etcd");
            if (Files.isExecutable(candidate)) {
                return candidate.toString();
            }
        }
        throw new IllegalStateException("etcd not found on the PATH: the etcd tests need a real server."
                + " Install one (Debian/Ubuntu: apt-get install etcd-server) or point -D" + BINARY_PROPERTY
                + "=/path/to/etcd at it");
    }

    private Process running() {
        Process p = process;
        if (p == null) {
            throw new IllegalStateException(this + " was never started");
        }
        return p;
    }
}
