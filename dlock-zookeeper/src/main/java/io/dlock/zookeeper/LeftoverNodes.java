package io.dlock.zookeeper;

import io.dlock.LockBackendException;
import io.dlock.spi.QueueEntry;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Queue nodes this client gave up without being able to delete them, deleted as soon as it can
 * talk to the server again, from whatever session it has then.
 *
 * <p>Why: a lease released (or a waiter withdrawn) while the server is out of reach, or an entry of
 * a session that Curator gave up while disconnected, leaves an ephemeral node that only the
 * server's expiry of the old session removes. Every server restart starts that session's timeout
 * again (the server reloads its sessions with their full timeout), so with restarts close together
 * the waiters queued behind a node that no live client would delete, for as long as the restarts
 * went on (issue 17: 30.8 s without a grant). The client knows the node's path and the session
 * that owned it, so it deletes the node itself once connected.
 *
 * <p>Safety: a node is deleted only while it still exists with the ephemeral owner recorded when it
 * was given up, a session this client has abandoned or whose lease it has released; no grant of it
 * is live in this client (the engine declares a lease lost before Curator gives its session up, and
 * a released one is over). Nodes found by acquisition id ({@link #scan}) are deleted only when
 * owned by a session other than the one doing the scan: acquisition ids are unique to this client,
 * and its only live session is the current one.
 *
 * <p>Concurrency: {@link #sweep} runs at most one pass at a time (a counter of requests); a request
 * made during a pass causes another pass. Each pass is a chain of asynchronous calls on the
 * ZooKeeper event thread; nothing blocks. Failure: a node that could not be read or deleted for
 * connection trouble is tried again with the retry policy's back-off, up to its retries, and after
 * that on the next (re)connection; any other error drops it with a warning (the server's expiry of
 * its session remains the backstop).
 */
final class LeftoverNodes {
    private static final Logger log = LoggerFactory.getLogger(LeftoverNodes.class);

    /** A node to delete while it is still owned by {@code session}. */
    private record Node(String lockName, String path, long session) {}

    /** An acquisition whose create's outcome is unknown in a session that has since ended. */
    private record Scan(String lockName, String acquisitionId) {}

    private final ZooKeeperBackend backend;
    private final Map<String, Node> nodes = new ConcurrentHashMap<>();
    private final Map<Scan, Boolean> scans = new ConcurrentHashMap<>();
    /** Sweeps asked for; non-zero while a pass runs. */
    private final AtomicInteger requests = new AtomicInteger();
    /** The token of a pass waiting out its back-off, or null; a sweep request runs it at once. */
    private final AtomicReference<Object> parked = new AtomicReference<>();

    LeftoverNodes(ZooKeeperBackend backend) {
        this.backend = backend;
    }

    /** Remembers {@code entry}'s node, owned by {@code entry.session()}, and sweeps. */
    void add(QueueEntry entry) {
        add(entry.lockName(), backend.nodePath(entry.lockName(), LockNodes.nodeName(entry)), entry.session());
    }

    /** Remembers the node at {@code path}, owned by {@code session}, and sweeps. */
    void add(String lockName, String path, long session) {
        if (backend.isClosed() || session == 0) {
            return; // closed: its sessions end with it; 0: not an ephemeral node
        }
        if (nodes.putIfAbsent(path, new Node(lockName, path, session)) == null) {
            log.debug(
                    "[lock={} state=RELEASING] will delete {} of session 0x{} once connected",
                    lockName,
                    path,
                    Long.toHexString(session));
        }
        sweep();
    }

    /**
     * Remembers to look for nodes of {@code acquisitionId} owned by a session other than the
     * current one (a create whose reply was lost in a session that has since ended), and sweeps.
     */
    void scan(String lockName, String acquisitionId) {
        if (backend.isClosed()) {
            return;
        }
        scans.put(new Scan(lockName, acquisitionId), Boolean.TRUE);
        sweep();
    }

    /** Deletes what it can now; called on every (re)connection and after every addition. Never blocks. */
    void sweep() {
        if (requests.getAndIncrement() == 0 || parked.getAndSet(null) != null) {
            pass(0); // none running, or one waiting out a back-off (a reconnection should not wait)
        }
    }

    void clear() {
        nodes.clear();
        scans.clear();
    }

    private void pass(int attempt) {
        if (backend.isClosed()) {
            return;
        }
        int seen = requests.get();
        CompletableFuture<Boolean> chain = CompletableFuture.completedFuture(true);
        for (Scan s : List.copyOf(scans.keySet())) {
            chain = chain.thenCompose(ok -> bounded(scanOne(s)).thenApply(done -> ok & done));
        }
        // After the scans, which add what they find.
        CompletableFuture<Boolean> all = chain.thenCompose(ok -> {
            CompletableFuture<Boolean> c = CompletableFuture.completedFuture(ok);
            for (Node n : List.copyOf(nodes.values())) {
                c = c.thenCompose(ok2 -> bounded(deleteOne(n)).thenApply(done -> ok2 & done));
            }
            return c;
        });
        all.whenComplete((ok, err) -> {
            if (backend.isClosed()) {
                return;
            }
            if (err != null) {
                log.debug("sweeping leftover nodes failed: {}", err.toString());
            }
            boolean unfinished = err != null || !ok;
            int max = Math.max(1, backend.options.retryPolicy().maxRetries());
            if (unfinished && attempt < max && requests.get() == seen) {
                later(attempt + 1);
            } else if (!requests.compareAndSet(seen, 0)) {
                // Asked again while this pass ran, typically by a reconnection: try now, not after
                // a back-off that may outlast the old session's expiry on the server.
                pass(0);
            }
            // else: done, or what is left waits for the next (re)connection
        });
    }

    /**
     * A step that has not answered within the connect timeout counts as unfinished, so that one
     * unanswered call cannot hold up every later sweep (ZooKeeper answers every call in the end,
     * with CONNECTIONLOSS at the latest; this is only a backstop).
     */
    private CompletableFuture<Boolean> bounded(CompletableFuture<Boolean> step) {
        return step.completeOnTimeout(false, backend.options.connectTimeout().toMillis(), TimeUnit.MILLISECONDS);
    }

    /** After the retry policy's back-off, once connected or after the connect timeout. */
    private void later(int attempt) {
        long base = backend.options.retryPolicy().baseSleep().toMillis();
        long max = backend.options.retryPolicy().maxSleep().toMillis();
        long delay = Math.min(max, base << Math.min(20, attempt - 1));
        Object token = new Object();
        parked.set(token);
        CompletableFuture.delayedExecutor(delay, TimeUnit.MILLISECONDS)
                .execute(() -> backend.whenConnected().whenComplete((x, e) -> {
                    if (parked.compareAndSet(token, null)) {
                        pass(attempt);
                    }
                }));
    }

    /** True when the node is dealt with (deleted, gone, or no longer the one given up). */
    private CompletableFuture<Boolean> deleteOne(Node node) {
        ZooKeeper zk;
        try {
            zk = backend.zk();
        } catch (LockBackendException e) {
            return CompletableFuture.completedFuture(false);
        }
        CompletableFuture<Boolean> done = new CompletableFuture<>();
        zk.exists(
                node.path(),
                false,
                (rc, path, ctx, stat) -> {
                    Code code = Code.get(rc);
                    switch (code) {
                        case NONODE -> settle(node, done, "gone already");
                        case OK -> {
                            if (stat.getEphemeralOwner() != node.session()) {
                                settle(node, done, "now owned by another session");
                                return;
                            }
                            deleteNode(zk, node, stat, done);
                        }
                        case CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONEXPIRED, SESSIONMOVED -> done.complete(false);
                        default -> {
                            log.warn(
                                    "[lock={} state=RELEASING] cannot read leftover {}: {}; its session's expiry"
                                            + " removes it",
                                    node.lockName(),
                                    node.path(),
                                    code);
                            settle(node, done, null);
                        }
                    }
                },
                null);
        return done;
    }

    private void deleteNode(ZooKeeper zk, Node node, Stat stat, CompletableFuture<Boolean> done) {
        zk.delete(
                node.path(),
                stat.getVersion(),
                (rc, path, ctx) -> {
                    Code code = Code.get(rc);
                    switch (code) {
                        case OK -> settle(node, done, "deleted");
                        case NONODE -> settle(node, done, "gone already");
                        case CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONEXPIRED, SESSIONMOVED, BADVERSION -> done
                                .complete(false);
                        default -> {
                            log.warn(
                                    "[lock={} state=RELEASING] cannot delete leftover {}: {}; its session's expiry"
                                            + " removes it",
                                    node.lockName(),
                                    node.path(),
                                    code);
                            settle(node, done, null);
                        }
                    }
                },
                null);
    }

    private void settle(Node node, CompletableFuture<Boolean> done, @Nullable String how) {
        nodes.remove(node.path(), node);
        if (how != null) {
            log.debug("[lock={} state=RELEASING] leftover {}: {}", node.lockName(), node.path(), how);
        }
        done.complete(true);
    }

    /** Finds the acquisition's nodes owned by another session than the scanning one; adds them. */
    private CompletableFuture<Boolean> scanOne(Scan scan) {
        ZooKeeper zk;
        try {
            zk = backend.zk();
        } catch (LockBackendException e) {
            return CompletableFuture.completedFuture(false);
        }
        String parent = backend.lockPath(scan.lockName());
        CompletableFuture<Boolean> done = new CompletableFuture<>();
        zk.getChildren(
                parent,
                false,
                (rc, path, ctx, children) -> {
                    Code code = Code.get(rc);
                    switch (code) {
                        case OK -> {
                            List<String> mine = new ArrayList<>();
                            for (String c : children) {
                                if (LockNodes.belongsTo(c, scan.acquisitionId())) {
                                    mine.add(parent + "/" + c);
                                }
                            }
                            ownersOf(zk, scan, mine, 0, done);
                        }
                        case NONODE -> {
                            scans.remove(scan);
                            done.complete(true);
                        }
                        case CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONEXPIRED, SESSIONMOVED -> done.complete(false);
                        default -> {
                            log.warn("[lock={} state=CANCELLED] cannot read {}: {}", scan.lockName(), parent, code);
                            scans.remove(scan);
                            done.complete(true);
                        }
                    }
                },
                null);
        return done;
    }

    private void ownersOf(ZooKeeper zk, Scan scan, List<String> paths, int i, CompletableFuture<Boolean> done) {
        if (i >= paths.size()) {
            scans.remove(scan);
            done.complete(true);
            return;
        }
        zk.exists(
                paths.get(i),
                false,
                (rc, path, ctx, stat) -> {
                    Code code = Code.get(rc);
                    switch (code) {
                        case OK -> {
                            // Read after the reply: a handle has no session id before it connects.
                            long current = zk.getSessionId();
                            long owner = stat.getEphemeralOwner();
                            if (owner != 0 && current != 0 && owner != current) {
                                nodes.putIfAbsent(path, new Node(scan.lockName(), path, owner));
                            }
                            ownersOf(zk, scan, paths, i + 1, done);
                        }
                        case NONODE -> ownersOf(zk, scan, paths, i + 1, done);
                        case CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONEXPIRED, SESSIONMOVED -> done.complete(false);
                        default -> ownersOf(zk, scan, paths, i + 1, done);
                    }
                },
                null);
    }
}
