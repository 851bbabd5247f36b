package io.dlock.testkit;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.zookeeper.server.ContainerManager;
import org.apache.zookeeper.server.DataNode;
import org.apache.zookeeper.server.DataTree;
import org.apache.zookeeper.server.RequestProcessor;
import org.apache.zookeeper.server.ServerCnxnFactory;
import org.apache.zookeeper.server.ZooKeeperServer;
import org.apache.zookeeper.server.persistence.FileTxnSnapLog;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A standalone ZooKeeper server running inside the test JVM, with inspection helpers that read the
 * server's in-memory tree directly (no client) and a way to expire one client's session.
 *
 * <p>It uses a tick of {@value #TICK_TIME_MS} ms, so sessions may be as short as {@value
 * #MIN_SESSION_TIMEOUT_MS} ms (up to {@value #MAX_SESSION_TIMEOUT_MS} ms); the admin server is
 * off. To kill -9 or pause a server, use {@link ZooKeeperProcess} instead.
 *
 * <p>Thread-safety: safe from any thread; lifecycle calls are serialized on this object.
 */
public final class EmbeddedZooKeeper implements TestServer {

    /*
     * Concurrency: lifecycle (start, stop, close) and the reference to the running server are
     * guarded by `this`. Inspection reads ZooKeeper's DataTree, whose maps are concurrent and whose
     * nodes are locked by their own monitor, so it is safe next to the server's own threads.
     * Failure: a failed start leaves nothing listening and the txn log closed.
     * Invariants: server, factory and txnLog are all null (stopped) or all set (serving).
     */

    /** The ZooKeeper tick in milliseconds. */
    public static final int TICK_TIME_MS = 500;

    /** The shortest session timeout the server grants: two ticks. */
    public static final int MIN_SESSION_TIMEOUT_MS = 2 * TICK_TIME_MS;

    /** The longest session timeout the server grants. */
    public static final int MAX_SESSION_TIMEOUT_MS = 60_000;

    private static final Logger LOG = LoggerFactory.getLogger(EmbeddedZooKeeper.class);
    private static final int UNLIMITED_CLIENTS = 0;
    private static final Duration EXPIRE_WAIT = Duration.ofSeconds(10);

    private final int port;
    private final Path dataDir;
    private final @Nullable Path ownedDir; // null when the caller owns dataDir

    @GuardedBy("this")
    private @Nullable ZooKeeperServer server;

    @GuardedBy("this")
    private @Nullable ServerCnxnFactory factory;

    @GuardedBy("this")
    private @Nullable FileTxnSnapLog txnLog;

    @GuardedBy("this")
    private boolean closed;

    @GuardedBy("this")
    private @Nullable ContainerManager containers;

    /** How often empty container znodes (dlock's lock parents) are removed; production default is 60 s. */
    public static final int CONTAINER_CHECK_INTERVAL_MS = 500;

    /** Exposes the first request processor, which the container manager submits its deletes to. */
    private static final class Server extends ZooKeeperServer {
        Server(FileTxnSnapLog log) throws IOException {
            super(log, TICK_TIME_MS, MIN_SESSION_TIMEOUT_MS, MAX_SESSION_TIMEOUT_MS, -1, null, "");
        }

        RequestProcessor requestProcessor() {
            return firstProcessor;
        }
    }

    private EmbeddedZooKeeper(int port, Path dataDir, @Nullable Path ownedDir) {
        this.port = port;
        this.dataDir = dataDir;
        this.ownedDir = ownedDir;
    }

    /**
     * Starts a server on a free loopback port with a new temporary data directory, which {@link
     * #close()} deletes.
     *
     * <p>Blocking: until the server accepts clients. Thread-safety: safe from any thread. On
     * failure: {@link IllegalStateException} after three ports were taken by others, or {@link
     * UncheckedIOException}; the temporary directory is deleted.
     *
     * @return the running server
     * @throws IllegalStateException if it cannot start
     */
    public static EmbeddedZooKeeper start() {
        Path owned = Reaper.createTempDirectory("dlock-zk-");
        RuntimeException last = null;
        for (int attempt = 0; attempt < 3; attempt++) {
            EmbeddedZooKeeper zk = new EmbeddedZooKeeper(FreePorts.loopback(), owned.resolve("data"), owned);
            try {
                zk.serve();
                return zk;
            } catch (IllegalStateException e) {
                last = e;
                if (!(e.getCause() instanceof BindException)) {
                    break;
                }
            }
        }
        Reaper.deleteTempDirectory(owned);
        throw last;
    }

    /**
     * Starts a server on the given port and data directory, which {@link #close()} leaves in place.
     *
     * <p>Blocking: until the server accepts clients. Thread-safety: safe from any thread. On
     * failure: {@link IllegalStateException} (for example the port is taken); nothing is left
     * listening.
     *
     * @param port a port on 127.0.0.1, for example the port of a server closed earlier
     * @param dataDir a directory for snapshots and the txn log; created if missing; an existing
     *     one is loaded, which is how data survives a new server
     * @return the running server
     * @throws IllegalArgumentException if {@code port} is not in 1..65535
     * @throws IllegalStateException if it cannot start
     */
    public static EmbeddedZooKeeper start(int port, Path dataDir) {
        if (port < 1 || port > 65_535) {
            throw new IllegalArgumentException("port must be in 1..65535, was " + port);
        }
        EmbeddedZooKeeper zk = new EmbeddedZooKeeper(port, Objects.requireNonNull(dataDir, "dataDir"), null);
        zk.serve();
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
        return zookeeperUri(port, namespace);
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
     * Stops serving and closes all client connections, keeping the data for a later {@link
     * #restart()}.
     *
     * <p>Blocking: until the port is released. Thread-safety: safe from any thread; stopping a
     * stopped server does nothing. On failure: never throws; errors are logged.
     */
    public synchronized void stop() {
        ServerCnxnFactory f = factory;
        ZooKeeperServer s = server;
        FileTxnSnapLog log = txnLog;
        if (containers != null) {
            containers.stop();
            containers = null;
        }
        factory = null;
        server = null;
        txnLog = null;
        if (f != null) {
            f.shutdown(); // also shuts the server down
            try {
                f.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (s != null) {
            s.shutdown();
        }
        if (log != null) {
            try {
                log.close();
            } catch (IOException e) {
                LOG.warn("closing the txn log of {} failed", this, e);
            }
        }
    }

    /**
     * Stops the server and starts it again on the same port and data directory.
     *
     * <p>Clients keep their sessions if they reconnect within their session timeout, because
     * sessions are restored from the data directory.
     *
     * <p>Blocking: until the server accepts clients again. Thread-safety: safe from any thread. On
     * failure: {@link IllegalStateException} if closed or the port cannot be bound again; the
     * server is left stopped.
     *
     * @throws IllegalStateException if closed or the restart fails
     */
    @Override
    public synchronized void restart() {
        stop();
        serve();
    }

    /**
     * Returns how many data and exists watches are registered on the server, over all clients.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} if the server is stopped.
     *
     * @return the watch count
     * @throws IllegalStateException if not serving
     */
    public int watchCount() {
        return tree().getWatchCount();
    }

    /**
     * Returns how many data and exists watches are registered on nodes under {@code pathPrefix},
     * over all clients: unlike {@link #watchCount()}, blind to other tests' clients whose sessions
     * are still closing.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} if the server is stopped.
     *
     * @param pathPrefix the start of the watched paths to count, such as {@code "/ns/lock/"}
     * @return the watch count under it
     * @throws IllegalStateException if not serving
     */
    public int watchCount(String pathPrefix) {
        int n = 0;
        for (var e : tree().getWatchesByPath().toMap().entrySet()) {
            if (e.getKey().startsWith(pathPrefix)) {
                n += e.getValue().size();
            }
        }
        return n;
    }

    /**
     * Returns the names of a znode's children, sorted.
     *
     * <p>The root {@code "/"} also lists ZooKeeper's own {@code "zookeeper"} node.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} if the server is stopped.
     *
     * @param path an absolute znode path such as {@code "/"} or {@code "/locks/a"}
     * @return the child names, empty if the node does not exist or has none
     * @throws IllegalStateException if not serving
     */
    public List<String> children(String path) {
        Objects.requireNonNull(path, "path");
        DataNode node = tree().getNode(path);
        if (node == null) {
            return List.of();
        }
        List<String> names;
        synchronized (node) { // DataNode's own lock guards its child set
            names = new ArrayList<>(node.getChildren());
        }
        names.sort(null);
        return List.copyOf(names);
    }

    /**
     * Returns the number of znodes in the tree, including the root and ZooKeeper's system nodes
     * ({@code /zookeeper}, {@code /zookeeper/quota}, {@code /zookeeper/config}); compare against a
     * count taken before the test.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} if the server is stopped.
     *
     * @return the node count
     * @throws IllegalStateException if not serving
     */
    public int nodeCount() {
        return tree().getNodeCount();
    }

    /**
     * Stops or restarts the removal of empty container znodes (dlock's lock parents), which runs
     * every {@link #CONTAINER_CHECK_INTERVAL_MS} here: for a test that counts requests or
     * transactions and must not see the server's own.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} if the server is stopped; a restart ({@link #restart()}) checks
     * containers again.
     *
     * @param on whether empty containers are removed
     * @throws IllegalStateException if not serving
     */
    public synchronized void reapContainers(boolean on) {
        Server s = (Server) running();
        if (containers != null) {
            containers.stop(); // a stopped manager cannot start again: a new one takes its place
            containers = null;
        }
        if (on) {
            containers = containerManager(s);
        }
    }

    private static ContainerManager containerManager(Server s) {
        ContainerManager manager = new ContainerManager(
                s.getZKDatabase(),
                s.requestProcessor(),
                Integer.getInteger("znode.container.checkIntervalMs", CONTAINER_CHECK_INTERVAL_MS),
                Integer.getInteger("znode.container.maxPerMinute", 10_000),
                Long.getLong("znode.container.maxNeverUsedIntervalMs", 0L));
        manager.start();
        return manager;
    }

    /**
     * Returns the zxid of the last transaction the server applied.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} if the server is stopped.
     *
     * @return the zxid
     * @throws IllegalStateException if not serving
     */
    public long lastProcessedZxid() {
        return running().getZKDatabase().getDataTreeLastProcessedZxid();
    }

    /**
     * Returns how many requests the server has received from clients since it started (ZooKeeper's
     * {@code zk_packets_received}, pings included): compare against a count taken before the test.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} if the server is stopped.
     *
     * @return the packet count
     * @throws IllegalStateException if not serving
     */
    public long packetsReceived() {
        return running().serverStats().getPacketsReceived();
    }

    /**
     * Expires one client session on the server, as if its timeout had run out: its ephemeral nodes
     * and watches go, its connection is closed, and the client sees {@code Expired} when it
     * reconnects.
     *
     * <p>Blocking: until the server has closed the session, at most 10 s. Thread-safety: safe from
     * any thread. On failure: {@link IllegalArgumentException} if the server has no such session;
     * {@link IllegalStateException} if stopped or the session is still open after 10 s.
     *
     * @param sessionId the id from {@code ZooKeeper.getSessionId()}
     * @throws IllegalArgumentException if the session is unknown
     * @throws IllegalStateException if not serving or the close does not complete
     */
    public void expireSession(long sessionId) {
        ZooKeeperServer s = running();
        var sessions = s.getZKDatabase().getSessionWithTimeOuts();
        if (!sessions.containsKey(sessionId)) {
            throw new IllegalArgumentException(this + " has no session 0x" + Long.toHexString(sessionId));
        }
        s.expire(sessionId); // submits a closeSession request, exactly what a timeout does
        long deadline = System.nanoTime() + Timing.scale(EXPIRE_WAIT).toNanos();
        while (sessions.containsKey(sessionId)) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException(
                        this + ": session 0x" + Long.toHexString(sessionId) + " still open after " + EXPIRE_WAIT);
            }
            try {
                Thread.sleep(5); // polls a condition; the server offers no callback for a close
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(this + ": interrupted expiring a session", e);
            }
        }
    }

    /**
     * Stops the server and deletes the data directory if {@link #start()} created it.
     *
     * <p>Blocking: until the port is released. Thread-safety: safe from any thread; idempotent.
     * On failure: never throws; an undeletable directory is logged and left.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        stop();
        if (ownedDir != null) {
            Reaper.deleteTempDirectory(ownedDir);
        }
    }

    @Override
    public String toString() {
        return "EmbeddedZooKeeper[" + connectString() + ", " + dataDir + "]";
    }

    static String zookeeperUri(int port, String namespace) {
        return "zookeeper://127.0.0.1:" + port + "/" + TestServer.checkNamespace(namespace);
    }

    private synchronized void serve() {
        if (closed) {
            throw new IllegalStateException(this + " is closed");
        }
        // Only if unset, so a test that configures these itself keeps its values.
        setPropertyIfAbsent("zookeeper.4lw.commands.whitelist", "*");
        setPropertyIfAbsent("zookeeper.maxCnxns", "0"); // 0 = unlimited; silences a start-up warning
        FileTxnSnapLog log = null;
        ServerCnxnFactory f = null;
        try {
            Files.createDirectories(dataDir);
            log = new FileTxnSnapLog(dataDir.toFile(), dataDir.toFile());
            Server s = new Server(log);
            f = ServerCnxnFactory.createFactory(
                    new InetSocketAddress(FreePorts.loopbackAddress(), port), UNLIMITED_CLIENTS);
            f.startup(s); // loads the data directory and starts serving
            containers = containerManager(s);
            txnLog = log;
            factory = f;
            server = s;
        } catch (IOException | InterruptedException | RuntimeException e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            if (f != null) {
                f.shutdown();
            }
            if (log != null) {
                try {
                    log.close();
                } catch (IOException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw new IllegalStateException("cannot start " + this + ": " + e, e);
        }
    }

    private static void setPropertyIfAbsent(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }

    private synchronized ZooKeeperServer running() {
        if (server == null) {
            throw new IllegalStateException(this + " is not serving (stopped or closed)");
        }
        return server;
    }

    private DataTree tree() {
        return running().getZKDatabase().getDataTree();
    }
}
