package io.dlock.zookeeper;

import io.dlock.Capability;
import io.dlock.LockBackendException;
import io.dlock.LockOptions;
import io.dlock.RetryPolicy;
import io.dlock.spi.ConnectionState;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockProtocol;
import io.dlock.spi.QueueEntry;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.curator.CuratorZookeeperClient;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.curator.retry.BoundedExponentialBackoffRetry;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.ACL;
import org.jspecify.annotations.Nullable;

/**
 * A Curator-managed ZooKeeper connection. Curator owns connecting, reconnecting and session
 * expiry; this class translates its connection states once into dlock's {@link ConnectionState}
 * and hands the raw {@link ZooKeeper} handle to the lock recipe, which needs per-request control
 * over retries (a retried create would leave an orphan node).
 *
 * <p>Concurrency: Curator delivers state changes in order on its event thread; listeners and
 * connection waiters are concurrent collections.
 */
final class ZooKeeperBackend implements LockBackend {
    static final String NAME = "zookeeper";

    private static final Set<Capability> CAPABILITIES = Set.copyOf(EnumSet.of(
            Capability.EXCLUSIVE,
            Capability.FAIR,
            Capability.READ_WRITE,
            Capability.SEMAPHORE,
            Capability.MULTI_LOCK,
            Capability.FENCING_TOKENS,
            Capability.LOST_DETECTION,
            Capability.CRASH_RELEASE,
            Capability.NO_HERD));

    final ZooKeeperUri uri;
    /** {@code /<namespace>/}: every lock's path starts with it. */
    private final String pathPrefix;

    final LockOptions options;
    final CuratorFramework curator;
    final List<ACL> acl;
    final byte[] nodeData;
    private final ZooKeeperLockProtocol mutex;
    private final List<Consumer<ConnectionState>> listeners = new CopyOnWriteArrayList<>();
    private final Queue<CompletableFuture<Void>> connectWaiters = new ConcurrentLinkedQueue<>();
    private final Duration maxSuspension;
    private volatile boolean closed;

    private ZooKeeperBackend(ZooKeeperUri uri, CuratorFramework curator, Duration negotiatedSessionTimeout) {
        this.uri = uri;
        this.pathPrefix = "/" + uri.namespace() + "/";
        this.options = uri.options();
        this.curator = curator;
        this.acl = uri.hasCredentials() ? ZooDefs.Ids.CREATOR_ALL_ACL : ZooDefs.Ids.OPEN_ACL_UNSAFE;
        // Who created a node, for dlock inspect: "dlock pid <pid> host <host>".
        this.nodeData =
                ("dlock pid " + ProcessHandle.current().pid() + " host " + hostName()).getBytes(StandardCharsets.UTF_8);
        // The client reports a drop after 2/3 of the session timeout without a reply, so the
        // server may expire the session as soon as 1/3 of it after we notice. Waiting that whole
        // third left no room for the delay between the drop and the engine's timer (Curator's
        // event thread, scheduling): the server expired the session and granted the lock to the
        // next client while this one still called its lease valid (ZooKeeperFaultIT's cut-off
        // holder, about 100 ms late). Half of the third is kept as a safety margin, so a lease
        // turns invalid 5/6 of the session timeout after the last reply.
        this.maxSuspension = negotiatedSessionTimeout.dividedBy(6);
        this.mutex = new ZooKeeperLockProtocol(this);
    }

    private static String hostName() {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException e) {
            host = System.getenv().getOrDefault("HOSTNAME", "unknown");
        }
        return host.isBlank() ? "unknown" : host.replaceAll("\\s", "_");
    }

    static ZooKeeperBackend connect(ZooKeeperUri uri) {
        LockOptions options = uri.options();
        RetryPolicy retry = options.retryPolicy();
        CuratorFrameworkFactory.Builder builder = CuratorFrameworkFactory.builder()
                .connectString(uri.connectString())
                .sessionTimeoutMs(millis(requestedSessionTimeout(options)))
                .connectionTimeoutMs(
                        Math.min(millis(options.connectTimeout()), millis(requestedSessionTimeout(options))))
                .retryPolicy(new BoundedExponentialBackoffRetry(
                        millis(retry.baseSleep()), millis(retry.maxSleep()), Math.min(retry.maxRetries(), 29)));
        if (uri.connectString().indexOf('/') < 0) { // no chroot: DirectZooKeeper sends paths as given
            builder.zookeeperFactory(DirectZooKeeper.factory());
        }
        if (uri.hasCredentials()) {
            builder.authorization("digest", (uri.user() + ":" + uri.password()).getBytes(StandardCharsets.UTF_8));
        }
        CuratorFramework curator = builder.build();
        Holder holder = new Holder();
        ConnectionStateListener listener = (client, state) -> {
            ZooKeeperBackend b = holder.backend;
            if (b != null) {
                b.onCuratorState(state);
            }
        };
        curator.getConnectionStateListenable().addListener(listener);
        try {
            curator.start();
            if (!curator.blockUntilConnected(millis(options.connectTimeout()), TimeUnit.MILLISECONDS)) {
                throw new LockBackendException(
                        null,
                        NAME,
                        "cannot connect to " + uri.connectString() + " within " + options.connectTimeout()
                                + " (is ZooKeeper running there?)",
                        null);
            }
            int negotiated = curator.getZookeeperClient().getZooKeeper().getSessionTimeout();
            ZooKeeperBackend backend = new ZooKeeperBackend(uri, curator, Duration.ofMillis(negotiated));
            holder.backend = backend;
            return backend;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            curator.close();
            throw new LockBackendException(null, NAME, "interrupted while connecting to " + uri.connectString(), e);
        } catch (LockBackendException e) {
            curator.close();
            throw e;
        } catch (Exception e) {
            curator.close();
            throw new LockBackendException(null, NAME, "cannot connect to " + uri.connectString() + ": " + e, e);
        }
    }

    private static final class Holder {
        volatile @Nullable ZooKeeperBackend backend;
    }

    private void onCuratorState(org.apache.curator.framework.state.ConnectionState state) {
        ConnectionState mapped =
                switch (state) {
                    case CONNECTED -> ConnectionState.CONNECTED;
                    case RECONNECTED -> ConnectionState.RECONNECTED;
                    case SUSPENDED, READ_ONLY -> ConnectionState.SUSPENDED;
                    case LOST -> ConnectionState.LOST;
                };
        if (mapped == ConnectionState.CONNECTED || mapped == ConnectionState.RECONNECTED) {
            CompletableFuture<Void> w;
            while ((w = connectWaiters.poll()) != null) {
                w.complete(null);
            }
            mutex.leftovers.sweep(); // nodes given up while out of reach go now, not at their expiry
        }
        for (Consumer<ConnectionState> l : listeners) {
            l.accept(mapped);
        }
    }

    /**
     * The current ZooKeeper handle (Curator replaces it after a session expiry). Never waits when
     * called from a reply on ZooKeeper's I/O thread ({@link DirectZooKeeper#replying()}): while not
     * connected, Curator's {@code getZooKeeper()} takes a lock that a thread closing the handle
     * holds while it waits for that I/O thread, so there it fails as a lost connection instead, and
     * the caller's retry waits for the connection elsewhere.
     *
     * @throws LockBackendException if there is no handle to be had now
     */
    ZooKeeper zk() {
        CuratorZookeeperClient client = curator.getZookeeperClient();
        if (!client.isConnected() && DirectZooKeeper.replying()) {
            throw new LockBackendException(
                    null, NAME, "no ZooKeeper connection (seen on the client's I/O thread, which must not wait)", null);
        }
        try {
            return client.getZooKeeper();
        } catch (Exception e) {
            throw new LockBackendException(null, NAME, "no ZooKeeper connection: " + e, e);
        }
    }

    /**
     * Completes once connected, or fails after the connect timeout, or at once when the backend is
     * closed. Never blocks.
     */
    CompletableFuture<Void> whenConnected() {
        CompletableFuture<Void> w = new CompletableFuture<>();
        connectWaiters.add(w);
        if (closed) { // after the add: either this sees it, or close() drains the waiter
            connectWaiters.remove(w);
            w.completeExceptionally(new IllegalStateException(NAME + " client closed"));
            return w;
        }
        if (curator.getZookeeperClient().isConnected()) {
            connectWaiters.remove(w);
            w.complete(null);
            return w;
        }
        return w.orTimeout(millis(options.connectTimeout()), TimeUnit.MILLISECONDS)
                .whenComplete((x, e) -> {
                    connectWaiters.remove(w);
                });
    }

    /** The parent of {@code lockName}'s queue nodes. */
    String lockPath(String lockName) {
        return pathPrefix + lockName;
    }

    /** The path of {@code lockName}'s queue node {@code node}. */
    String nodePath(String lockName, String node) {
        return pathPrefix + lockName + "/" + node;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<Capability> capabilities() {
        return CAPABILITIES;
    }

    @Override
    public LockProtocol protocol() {
        return mutex;
    }

    @Override
    public Optional<LockInspector> inspector() {
        return Optional.of(new ZooKeeperInspector(this));
    }

    @Override
    public void onConnectionState(Consumer<ConnectionState> listener) {
        listeners.add(listener);
    }

    /** The engine's listener for grants removed by force; set once, before any lock is used. */
    volatile Consumer<QueueEntry> forcedListener = e -> {};

    @Override
    public void onForcedRelease(Consumer<QueueEntry> listener) {
        forcedListener = listener;
    }

    @Override
    public Duration maxSuspension() {
        return maxSuspension;
    }

    /** Whether {@link #close()} has begun; nothing is retried after that. */
    boolean isClosed() {
        return closed;
    }

    /**
     * Closes the Curator client (ending the session, so the server removes this client's nodes) and
     * completes every stage the protocol still has in flight, so that none is left pending.
     */
    @Override
    public void close() {
        closed = true;
        CompletableFuture<Void> w;
        while ((w = connectWaiters.poll()) != null) {
            w.completeExceptionally(new IllegalStateException(NAME + " client closed"));
        }
        try {
            curator.close();
        } finally {
            mutex.closed();
        }
    }

    private static Duration requestedSessionTimeout(LockOptions options) {
        Duration asked = options.sessionTimeout();
        return asked.compareTo(ZooKeeperUri.MAX_REQUESTED_SESSION_TIMEOUT) > 0
                ? ZooKeeperUri.MAX_REQUESTED_SESSION_TIMEOUT
                : asked;
    }

    private static int millis(Duration d) {
        return (int) Math.min(Integer.MAX_VALUE, d.toMillis());
    }

    @Override
    public String toString() {
        return "ZooKeeperBackend[" + uri + "]";
    }
}
