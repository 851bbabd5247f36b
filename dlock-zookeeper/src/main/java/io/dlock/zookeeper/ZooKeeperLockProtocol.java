package io.dlock.zookeeper;

import io.dlock.LockBackendException;
import io.dlock.spi.EntryLostException;
import io.dlock.spi.Grant;
import io.dlock.spi.LockProtocol;
import io.dlock.spi.Position;
import io.dlock.spi.QueueEntry;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * dlock's exclusive-lock recipe on ZooKeeper.
 *
 * <p>Each lock name is a container znode {@code /<namespace>/<name>}; each acquisition creates an
 * ephemeral-sequential child {@code _c_<acquisition id>-lock-<seq>}. The lowest sequence holds the
 * lock; every other child watches only its immediate predecessor (a {@code getData} watch, which
 * unlike {@code exists} leaves nothing behind when the node is already gone) and re-reads the
 * children when it goes, since a middle waiter may have left. The fencing token is the child's
 * creation zxid, which increases across the whole ensemble in queue order.
 *
 * <p>Failure: the create and the first {@code getChildren} are pipelined (ZooKeeper answers one
 * session's requests in order), so an uncontended acquire waits one round trip. A create whose
 * reply is lost is never blindly retried: after reconnecting, the client looks for a child carrying
 * its acquisition id and adopts it only if that child's ephemeral owner is the current session (a
 * node of an expired session is about to vanish, and adopting it let two clients hold a Curator
 * lock at once); otherwise it creates a new one. Deletes are retried through connection drops until
 * the node is gone or its session has ended.
 *
 * <p>Concurrency: every callback runs on the ZooKeeper client's event thread and only completes
 * futures; nothing here blocks.
 */
final class ZooKeeperLockProtocol implements LockProtocol {
    private static final Logger log = LoggerFactory.getLogger(ZooKeeperLockProtocol.class);

    private final ZooKeeperBackend backend;

    ZooKeeperLockProtocol(ZooKeeperBackend backend) {
        this.backend = backend;
    }

    // ---- enqueue

    @Override
    public CompletionStage<Position> enqueue(String lockName, String acquisitionId) {
        CompletableFuture<Position> result = new CompletableFuture<>();
        createAndRead(lockName, acquisitionId, result, 0);
        return result;
    }

    private void createAndRead(String lockName, String id, CompletableFuture<Position> result, int attempt) {
        ZooKeeper zk;
        try {
            zk = backend.zk();
        } catch (LockBackendException e) {
            afterConnectionTrouble(lockName, id, result, attempt, e);
            return;
        }
        String parent = backend.lockPath(lockName);
        long session = zk.getSessionId();
        AtomicReference<Object[]> created = new AtomicReference<>();
        zk.create(parent + "/" + LockNodes.prefix(id), backend.nodeData, backend.acl, CreateMode.EPHEMERAL_SEQUENTIAL,
                (rc, path, ctx, name, stat) -> created.set(new Object[] {rc, name, stat}), null);
        // Pipelined: answered after the create, so it already lists the new child.
        zk.getChildren(parent, false, (rc, path, ctx, children, stat) -> {
            Object[] c = created.get();
            Code createCode = Code.get((Integer) c[0]);
            switch (createCode) {
                case OK -> {
                    String name = (String) c[1];
                    long czxid = ((Stat) c[2]).getCzxid();
                    QueueEntry entry = new QueueEntry(lockName, id, name, session, czxid);
                    if (Code.get(rc) == Code.OK) {
                        result.complete(position(entry, children));
                    } else {
                        readPosition(entry, result);
                    }
                }
                case NONODE -> ensureParent(parent, lockName).whenComplete((ok, err) -> {
                    if (err != null) {
                        result.completeExceptionally(err);
                    } else if (attempt >= maxAttempts()) {
                        result.completeExceptionally(failure(lockName, "creating " + parent, Code.NONODE));
                    } else {
                        createAndRead(lockName, id, result, attempt + 1);
                    }
                });
                case CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONEXPIRED, SESSIONMOVED ->
                    afterConnectionTrouble(lockName, id, result, attempt, null);
                default -> result.completeExceptionally(failure(lockName, "creating a node under " + parent, createCode));
            }
        }, null);
    }

    /** The create's outcome is unknown: reconnect, then adopt our node if this session has it. */
    private void afterConnectionTrouble(
            String lockName, String id, CompletableFuture<Position> result, int attempt, Throwable cause) {
        if (attempt >= maxAttempts()) {
            result.completeExceptionally(new LockBackendException(lockName, ZooKeeperBackend.NAME,
                    "gave up after " + (attempt + 1) + " attempts to enqueue: connection kept failing", cause));
            return;
        }
        backend.whenConnected()
                .thenCompose(x -> findOwnEntry(lockName, id))
                .whenComplete((found, err) -> {
                    if (err != null) {
                        result.completeExceptionally(new LockBackendException(lockName, ZooKeeperBackend.NAME,
                                "not connected within " + backend.options.connectTimeout(), err));
                    } else if (found.isPresent()) {
                        log.debug("[lock={} state=QUEUED] adopted own node {} after a lost reply", lockName,
                                found.get().key());
                        readPosition(found.get(), result);
                    } else {
                        createAndRead(lockName, id, result, attempt + 1);
                    }
                });
    }

    private CompletableFuture<Void> ensureParent(String parent, String lockName) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        try {
            backend.curator.create()
                    .creatingParentContainersIfNeeded()
                    .withMode(CreateMode.CONTAINER)
                    .withACL(backend.acl)
                    .inBackground((client, event) -> {
                        Code code = Code.get(event.getResultCode());
                        if (code == Code.OK || code == Code.NODEEXISTS) {
                            done.complete(null);
                        } else {
                            done.completeExceptionally(failure(lockName, "creating " + parent, code));
                        }
                    })
                    .forPath(parent);
        } catch (Exception e) {
            done.completeExceptionally(new LockBackendException(lockName, ZooKeeperBackend.NAME,
                    "creating " + parent + " failed: " + e, e));
        }
        return done;
    }

    // ---- waiting

    @Override
    public CompletionStage<Position> awaitTurn(Position waiting) {
        CompletableFuture<Position> result = new CompletableFuture<>();
        watchPredecessor(waiting, result);
        return result;
    }

    private void watchPredecessor(Position waiting, CompletableFuture<Position> result) {
        QueueEntry entry = waiting.entry();
        ZooKeeper zk = zkOrFail(result);
        if (zk == null) {
            return;
        }
        if (zk.getSessionId() != entry.session()) {
            result.completeExceptionally(new EntryLostException(entry, "its session ended"));
            return;
        }
        Watcher watcher = new Watcher() {
            @Override
            public void process(WatchedEvent event) {
                switch (event.getType()) {
                    case NodeDeleted -> readPosition(entry, result);
                    case None -> {
                        // Disconnected: ZooKeeper re-registers the watch when it reconnects within
                        // the session. Expired: our node is gone too.
                        if (event.getState() == Event.KeeperState.Expired
                                || event.getState() == Event.KeeperState.Closed) {
                            result.completeExceptionally(new EntryLostException(entry, "session " + event.getState()));
                        }
                    }
                    default -> watchPredecessor(waiting, result); // data changed: watch again
                }
            }
        };
        String predecessor = entry.key().substring(0, entry.key().lastIndexOf('/') + 1) + waiting.predecessor();
        zk.getData(predecessor, watcher, (rc, path, ctx, data, stat) -> {
            Code code = Code.get(rc);
            switch (code) {
                case OK -> { } // watch set: wait for the predecessor to go
                case NONODE -> readPosition(entry, result); // already gone: no watch was left behind
                case CONNECTIONLOSS, OPERATIONTIMEOUT -> retryWhenConnected(result, () -> watchPredecessor(waiting, result));
                case SESSIONEXPIRED -> result.completeExceptionally(new EntryLostException(entry, "session expired"));
                default -> result.completeExceptionally(failure(entry.lockName(), "watching " + predecessor, code));
            }
        }, null);
    }

    /** Re-reads the queue and reports where {@code entry} stands now. */
    private void readPosition(QueueEntry entry, CompletableFuture<Position> result) {
        ZooKeeper zk = zkOrFail(result);
        if (zk == null) {
            return;
        }
        String parent = parentOf(entry.key());
        zk.getChildren(parent, false, (rc, path, ctx, children, stat) -> {
            Code code = Code.get(rc);
            switch (code) {
                case OK -> {
                    try {
                        result.complete(position(entry, children));
                    } catch (EntryLostException e) {
                        result.completeExceptionally(e);
                    }
                }
                case NONODE -> result.completeExceptionally(new EntryLostException(entry, "its lock node is gone"));
                case CONNECTIONLOSS, OPERATIONTIMEOUT -> retryWhenConnected(result, () -> readPosition(entry, result));
                case SESSIONEXPIRED -> result.completeExceptionally(new EntryLostException(entry, "session expired"));
                default -> result.completeExceptionally(failure(entry.lockName(), "reading " + parent, code));
            }
        }, null);
    }

    private static Position position(QueueEntry entry, List<String> children) {
        String own = entry.key().substring(entry.key().lastIndexOf('/') + 1);
        if (!children.contains(own)) {
            throw new EntryLostException(entry, "it is no longer among the lock's children");
        }
        String predecessor = LockNodes.predecessor(own, children);
        return predecessor == null
                ? Position.granted(new Grant(entry, entry.token(), Long.MAX_VALUE))
                : Position.waiting(entry, predecessor);
    }

    // ---- release

    @Override
    public CompletionStage<Void> release(QueueEntry entry) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        delete(entry, done);
        return done;
    }

    private void delete(QueueEntry entry, CompletableFuture<Void> done) {
        ZooKeeper zk;
        try {
            zk = backend.zk();
        } catch (LockBackendException e) {
            retryDeleteWhenConnected(entry, done);
            return;
        }
        if (zk.getSessionId() != entry.session()) {
            done.complete(null); // its session ended: the server removes the ephemeral node
            return;
        }
        zk.delete(entry.key(), -1, (rc, path, ctx) -> {
            Code code = Code.get(rc);
            switch (code) {
                case OK, NONODE, SESSIONEXPIRED -> done.complete(null);
                case CONNECTIONLOSS, OPERATIONTIMEOUT -> retryDeleteWhenConnected(entry, done);
                default -> done.completeExceptionally(failure(entry.lockName(), "deleting " + entry.key(), code));
            }
        }, null);
    }

    private void retryDeleteWhenConnected(QueueEntry entry, CompletableFuture<Void> done) {
        if (backend.curator.getState() != org.apache.curator.framework.imps.CuratorFrameworkState.STARTED) {
            done.complete(null); // client closed: the session ends with it
            return;
        }
        // Not connected within the connect timeout: keep trying; the loop ends when the node is
        // gone or Curator has replaced the session (checked at the top of delete).
        backend.whenConnected().whenComplete((x, err) -> delete(entry, done));
    }

    // ---- recovery

    @Override
    public CompletionStage<Optional<QueueEntry>> findOwnEntry(String lockName, String acquisitionId) {
        CompletableFuture<Optional<QueueEntry>> result = new CompletableFuture<>();
        ZooKeeper zk = zkOrFail(result);
        if (zk == null) {
            return result;
        }
        long session = zk.getSessionId();
        String parent = backend.lockPath(lockName);
        zk.getChildren(parent, false, (rc, path, ctx, children, stat) -> {
            Code code = Code.get(rc);
            if (code == Code.NONODE) {
                result.complete(Optional.empty());
                return;
            }
            if (code != Code.OK) {
                result.completeExceptionally(failure(lockName, "reading " + parent, code));
                return;
            }
            List<String> mine = children.stream().filter(c -> LockNodes.belongsTo(c, acquisitionId)).toList();
            checkOwners(zk, lockName, acquisitionId, parent, mine, 0, session, result);
        }, null);
        return result;
    }

    /** Adopts the first candidate whose ephemeral owner is the current session. */
    private void checkOwners(ZooKeeper zk, String lockName, String id, String parent, List<String> candidates, int i,
            long session, CompletableFuture<Optional<QueueEntry>> result) {
        if (i >= candidates.size()) {
            result.complete(Optional.empty());
            return;
        }
        String path = parent + "/" + candidates.get(i);
        zk.exists(path, false, (rc, p, ctx, stat) -> {
            if (Code.get(rc) == Code.OK && stat != null && stat.getEphemeralOwner() == session) {
                result.complete(Optional.of(new QueueEntry(lockName, id, path, session, stat.getCzxid())));
            } else {
                if (stat != null) {
                    log.debug("[lock={} state=QUEUED] not adopting {}: owned by session 0x{}, not 0x{}", lockName, path,
                            Long.toHexString(stat.getEphemeralOwner()), Long.toHexString(session));
                }
                checkOwners(zk, lockName, id, parent, candidates, i + 1, session, result);
            }
        }, null);
    }

    // ---- helpers

    /** The current handle, or null after failing {@code result} when there is none. */
    private ZooKeeper zkOrFail(CompletableFuture<?> result) {
        try {
            return backend.zk();
        } catch (LockBackendException e) {
            result.completeExceptionally(e);
            return null;
        }
    }

    /** Runs {@code retry} once reconnected within the session, or fails {@code result}. */
    private void retryWhenConnected(CompletableFuture<?> result, Runnable retry) {
        backend.whenConnected().whenComplete((x, err) -> {
            if (err != null) {
                result.completeExceptionally(err);
            } else {
                retry.run();
            }
        });
    }

    private int maxAttempts() {
        return Math.max(1, backend.options.retryPolicy().maxRetries());
    }

    private static String parentOf(String path) {
        return path.substring(0, path.lastIndexOf('/'));
    }

    private static LockBackendException failure(String lockName, String what, Code code) {
        String hint = code == Code.NOAUTH ? " (not authorized: the lock was created with other credentials)" : "";
        return new LockBackendException(lockName, ZooKeeperBackend.NAME, what + " failed: " + code + hint,
                org.apache.zookeeper.KeeperException.create(code));
    }

}
