package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.zookeeper.server.ZooKeeperServerMain;
import org.jspecify.annotations.Nullable;

/**
 * A standalone ZooKeeper server in a separate JVM, so that tests can kill it with SIGKILL or
 * freeze it with SIGSTOP.
 *
 * <p>It runs {@code ZooKeeperServerMain} on the current classpath with a generated {@code
 * zoo.cfg}: tick {@value EmbeddedZooKeeper#TICK_TIME_MS} ms, sessions of 1 s to 60 s, admin server
 * off, all four-letter words allowed, listening on 127.0.0.1 only.
 *
 * <p>Thread-safety: safe from any thread; lifecycle calls are serialized on this object.
 */
public final class ZooKeeperProcess implements TestServer {

    /*
     * Concurrency: lifecycle calls and `closed` are guarded by `this`; `jvm` (the current child)
     * is volatile so that read-only calls do not wait behind a restart.
     * Failure: a child that does not answer `ruok` in time is killed before the exception is
     * thrown, so a failed start leaves no process behind.
     * Invariants: at most one child per instance is alive; port and data directory never change.
     */

    /** How long a start may take until the server answers {@code ruok}, before {@link Timing}. */
    public static final Duration START_TIMEOUT = Duration.ofSeconds(30);

    private static final Duration PROBE_TIMEOUT = Duration.ofMillis(500);
    private static final List<String> JVM_OPTIONS = List.of(
            "-Xmx128m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-Xshare:auto",
            "-Dzookeeper.admin.enableServer=false",
            "-Dznode.container.checkIntervalMs=" + EmbeddedZooKeeper.CONTAINER_CHECK_INTERVAL_MS,
            "-Dzookeeper.4lw.commands.whitelist=*",
            "-Dzookeeper.jmx.log4j.disable=true");

    private final int port;
    private final Path dataDir;
    private final Path workDir; // owned: holds zoo.cfg, and the data directory when start() made it
    private final Path config;

    // Written under `this`, read without it so pid() and isAlive() never wait for a restart.
    private volatile @Nullable ChildJvm jvm; // null only before the first launch

    @GuardedBy("this")
    private boolean closed;

    private ZooKeeperProcess(int port, Path dataDir, Path workDir) {
        this.port = port;
        this.dataDir = dataDir;
        this.workDir = workDir;
        this.config = workDir.resolve("zoo.cfg");
    }

    /**
     * Starts a ZooKeeper JVM on a free loopback port with a new temporary data directory, which
     * {@link #close()} deletes.
     *
     * <p>Blocking: until the server answers {@code ruok}, at most {@link #START_TIMEOUT} scaled by
     * {@link Timing}. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} with the child's last output lines; no process or directory is left.
     *
     * @return the running server
     * @throws IllegalStateException if it does not serve in time
     */
    public static ZooKeeperProcess start() {
        Path work = Reaper.createTempDirectory("dlock-zkproc-");
        ZooKeeperProcess zk = new ZooKeeperProcess(FreePorts.loopback(), work.resolve("data"), work);
        zk.launchOrCleanUp();
        return zk;
    }

    /**
     * Starts a ZooKeeper JVM on the given port and data directory; {@link #close()} leaves the data
     * directory in place.
     *
     * <p>Blocking: until the server answers {@code ruok}, at most {@link #START_TIMEOUT} scaled by
     * {@link Timing}. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} with the child's last output lines; no process is left.
     *
     * @param port a port on 127.0.0.1
     * @param dataDir the data directory; created if missing, loaded if it holds data
     * @return the running server
     * @throws IllegalArgumentException if {@code port} is not in 1..65535
     * @throws IllegalStateException if it does not serve in time
     */
    public static ZooKeeperProcess start(int port, Path dataDir) {
        if (port < 1 || port > 65_535) {
            throw new IllegalArgumentException("port must be in 1..65535, was " + port);
        }
        Objects.requireNonNull(dataDir, "dataDir");
        ZooKeeperProcess zk = new ZooKeeperProcess(port, dataDir, Reaper.createTempDirectory("dlock-zkproc-"));
        zk.launchOrCleanUp();
        return zk;
    }

    @Override
    public int port() {
        return port;
    }

    /**
     * Returns {@code zookeeper://127.0.0.1:PORT/<namespace>}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalArgumentException} for a blank namespace or one with whitespace.
     *
     * @param namespace the root znode path for dlock's data; one leading {@code '/'} is ignored
     * @return the URI as a string
     * @throws IllegalArgumentException if {@code namespace} is blank or contains whitespace
     */
    @Override
    public String uri(String namespace) {
        return EmbeddedZooKeeper.zookeeperUri(port, namespace);
    }

    /**
     * Returns the directory holding the server's snapshots and txn log.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return the data directory
     */
    public Path dataDir() {
        return dataDir;
    }

    /**
     * Returns the pid of the current server process (a new one after each {@link #restart()}).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails; after
     * {@link #kill()} it is the pid of the dead process.
     *
     * @return the pid
     */
    public long pid() {
        return launched().pid();
    }

    /**
     * Returns a snapshot of the current server process's output (stdout and stderr merged).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return the lines so far, oldest first
     */
    public List<String> lines() {
        return launched().lines();
    }

    /**
     * Kills the server with SIGKILL, as a crash would, and waits for the process to exit.
     *
     * <p>Blocking: until the process has exited, at most 30 s. Thread-safety: safe from any
     * thread; killing a dead server does nothing. On failure: {@link IllegalStateException} if the
     * process does not exit.
     *
     * @throws IllegalStateException if the process does not exit
     */
    public synchronized void kill() {
        launched().kill();
    }

    /**
     * Freezes the server with SIGSTOP: connections stay open but nothing is answered, like a long
     * GC pause or a hung host.
     *
     * <p>Blocking: until the signal is sent. Thread-safety: safe from any thread. On failure:
     * {@link IllegalStateException} if the process has exited or the signal fails.
     *
     * @throws IllegalStateException if the signal cannot be sent
     */
    public synchronized void pause() {
        launched().pause();
    }

    /**
     * Lets a paused server run again with SIGCONT.
     *
     * <p>Blocking: until the signal is sent, not until the server has caught up. Thread-safety:
     * safe from any thread. On failure: {@link IllegalStateException} if the process has exited
     * or the signal fails.
     *
     * @throws IllegalStateException if the signal cannot be sent
     */
    public synchronized void resume() {
        launched().resume();
    }

    /**
     * Returns whether the server process is running (a paused one counts as running).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return true while the process has not exited
     */
    public boolean isAlive() {
        return launched().isAlive();
    }

    /**
     * Kills the server with SIGKILL if it is alive and starts a new process on the same port and
     * data directory, so committed data must survive.
     *
     * <p>Blocking: until the new process answers {@code ruok}, at most {@link #START_TIMEOUT}
     * scaled by {@link Timing}. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} if closed or the new process does not serve in time; no process is
     * left running.
     *
     * @throws IllegalStateException if closed or the restart fails
     */
    @Override
    public synchronized void restart() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        launched().kill();
        launch();
    }

    /**
     * Kills the server process and deletes the directories the testkit created.
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
            if (jvm != null) {
                jvm.close();
            }
        } finally {
            Reaper.deleteTempDirectory(workDir);
        }
    }

    @Override
    public String toString() {
        return "ZooKeeperProcess[" + connectString() + ", " + dataDir + "]";
    }

    private synchronized void launchOrCleanUp() {
        try {
            launch();
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    @GuardedBy("this")
    private void launch() {
        writeConfig();
        ChildJvm child = ChildJvm.start(ZooKeeperServerMain.class, List.of(config.toString()), JVM_OPTIONS);
        jvm = child;
        Duration timeout = Timing.scale(START_TIMEOUT);
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!FourLetterWords.isOk(port, PROBE_TIMEOUT)) {
            if (!child.isAlive() || System.nanoTime() - deadline > 0) {
                String why = child.isAlive() ? "did not answer ruok within " + timeout : "exited";
                String tail = child.tail();
                child.close();
                if (tail.contains(BindException.class.getSimpleName())) {
                    why += " (port " + port + " is taken)";
                }
                throw new IllegalStateException(this + " " + why + tail);
            }
            try {
                Thread.sleep(50); // polls readiness; ZooKeeper offers no start-up callback across JVMs
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                child.close();
                throw new IllegalStateException(this + ": interrupted while starting", e);
            }
        }
    }

    private void writeConfig() {
        List<String> lines = new ArrayList<>(List.of(
                "tickTime=" + EmbeddedZooKeeper.TICK_TIME_MS,
                "minSessionTimeout=" + EmbeddedZooKeeper.MIN_SESSION_TIMEOUT_MS,
                "maxSessionTimeout=" + EmbeddedZooKeeper.MAX_SESSION_TIMEOUT_MS,
                "dataDir=" + dataDir.toAbsolutePath(),
                "clientPort=" + port,
                "clientPortAddress=127.0.0.1",
                "maxClientCnxns=0",
                "admin.enableServer=false",
                "4lw.commands.whitelist=*",
                // kill -9 keeps the page cache, so skipping fsync loses nothing a test can observe.
                "forceSync=no"));
        try {
            Files.createDirectories(dataDir);
            Files.write(config, lines, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + config, e);
        }
    }

    private ChildJvm launched() {
        ChildJvm j = jvm;
        if (j == null) {
            throw new IllegalStateException(this + " was never launched");
        }
        return j;
    }
}
