package io.dlock.zookeeper;

import io.dlock.LockBackendException;
import io.dlock.spi.EntryLostException;
import io.dlock.spi.Grant;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockProtocol;
import io.dlock.spi.LockRequest;
import io.dlock.spi.Position;
import io.dlock.spi.QueueEntry;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
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

    /** What a semaphore waiter waits for: any change among the children. */
    static final String WATCH_CHILDREN = "*";

    private final ZooKeeperBackend backend;
    /** The request behind each live semaphore entry of this client, by entry key (its total). */
    private final Map<String, LockRequest> requests = new ConcurrentHashMap<>();

    ZooKeeperLockProtocol(ZooKeeperBackend backend) {
        this.backend = backend;
    }

    // ---- enqueue

    @Override
    public CompletionStage<Position> enqueue(LockRequest request) {
        CompletableFuture<Position> result = new CompletableFuture<>();
        if (request.mode() == LockMode.SEMAPHORE) {
            agreeOnPermits(request).whenComplete((ok, err) -> {
                if (err != null) {
                    result.completeExceptionally(err);
                } else {
                    createAndRead(request, result, 0);
                }
            });
        } else {
            createAndRead(request, result, 0);
        }
        return result;
    }

    private void createAndRead(LockRequest request, CompletableFuture<Position> result, int attempt) {
        createAndRead(request, result, attempt, request.mode() == LockMode.READ && request.grantedDespite() != null);
    }

    private void createAndRead(LockRequest request, CompletableFuture<Position> result, int attempt,
            boolean downgrade) {
        String lockName = request.lockName();
        String id = request.acquisitionId();
        ZooKeeper zk;
        try {
            zk = backend.zk();
        } catch (LockBackendException e) {
            afterConnectionTrouble(request, result, attempt, e);
            return;
        }
        String parent = backend.lockPath(lockName);
        if (downgrade) {
            createDowngrade(request, result, attempt, zk, parent);
            return;
        }
        AtomicReference<Object[]> created = new AtomicReference<>();
        String prefix = LockNodes.prefix(id, request.mode(), request.permits());
        zk.create(parent + "/" + prefix, backend.nodeData, backend.acl, CreateMode.EPHEMERAL_SEQUENTIAL,
                (rc, path, ctx, name, stat) -> created.set(new Object[] {rc, name, stat}), null);
        // Pipelined: answered after the create, so it already lists the new child.
        zk.getChildren(parent, false, (rc, path, ctx, children, stat) -> {
            Object[] c = created.get();
            Code createCode = Code.get((Integer) c[0]);
            switch (createCode) {
                case OK -> {
                    String name = (String) c[1];
                    Stat createdStat = (Stat) c[2];
                    // The node's owner, not zk.getSessionId() read before the create: a handle
                    // that Curator has just created after an expiry reports session 0 until it
                    // connects, and an entry recorded with 0 looked "ended" to every later check,
                    // so the waiter queued again behind its own orphaned node (ZooKeeperFaultIT).
                    QueueEntry entry = new QueueEntry(lockName, id, name, createdStat.getEphemeralOwner(),
                            createdStat.getCzxid());
                    remember(entry.key(), request);
                    if (Code.get(rc) == Code.OK) {
                        complete(result, entry, children);
                    } else {
                        readPosition(entry, result);
                    }
                }
                case NONODE -> ensureParent(parent, lockName, new byte[0]).whenComplete((ok, err) -> {
                    if (err != null) {
                        result.completeExceptionally(err);
                    } else if (attempt >= maxAttempts()) {
                        result.completeExceptionally(failure(lockName, "creating " + parent, Code.NONODE));
                    } else {
                        createAndRead(request, result, attempt + 1);
                    }
                });
                case CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONEXPIRED, SESSIONMOVED ->
                    afterConnectionTrouble(request, result, attempt, null);
                default -> result.completeExceptionally(failure(lockName, "creating a node under " + parent, createCode));
            }
        }, null);
    }

    /**
     * A read under this thread's own write lock (a downgrade): the read node is created only if the
     * write node still exists, in one transaction, so a flagged read node always means "granted,
     * and no other writer may enter while it lives" (see {@link #position}). Its node may land
     * behind writers queued for the write lock; they wait for it. If the write node is already
     * gone, this is an ordinary read.
     */
    private void createDowngrade(LockRequest request, CompletableFuture<Position> result, int attempt, ZooKeeper zk,
            String parent) {
        String lockName = request.lockName();
        List<Op> ops = List.of(Op.check(request.grantedDespite(), -1),
                Op.create(parent + "/" + LockNodes.downgradePrefix(request.acquisitionId()), backend.nodeData,
                        backend.acl, CreateMode.EPHEMERAL_SEQUENTIAL));
        zk.multi(ops, (rc, path, ctx, results) -> {
            Code code = Code.get(rc);
            switch (code) {
                case OK -> readCreated(request, result, attempt, zk, parent,
                        ((OpResult.CreateResult) results.get(1)).getPath());
                case NONODE -> createAndRead(request, result, attempt, false);
                case CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONEXPIRED, SESSIONMOVED ->
                    afterConnectionTrouble(request, result, attempt, null);
                default -> result.completeExceptionally(failure(lockName, "creating a node under " + parent, code));
            }
        }, null);
    }

    /** Reads a node created in a transaction (which answers without its stat) and its position. */
    private void readCreated(LockRequest request, CompletableFuture<Position> result, int attempt, ZooKeeper zk,
            String parent, String name) {
        AtomicReference<Stat> created = new AtomicReference<>();
        zk.exists(name, false, (rc, path, ctx, stat) -> created.set(stat), null);
        // Pipelined: answered after the exists.
        zk.getChildren(parent, false, (rc, path, ctx, children, stat) -> {
            Stat node = created.get();
            if (Code.get(rc) != Code.OK || node == null) {
                afterConnectionTrouble(request, result, attempt, null); // adopts the node if it still lives
                return;
            }
            QueueEntry entry = new QueueEntry(request.lockName(), request.acquisitionId(), name,
                    node.getEphemeralOwner(), node.getCzxid());
            remember(entry.key(), request);
            complete(result, entry, children);
        }, null);
    }

    /** The create's outcome is unknown: reconnect, then adopt our node if this session has it. */
    private void afterConnectionTrouble(
            LockRequest request, CompletableFuture<Position> result, int attempt, Throwable cause) {
        String lockName = request.lockName();
        String id = request.acquisitionId();
        if (attempt >= maxAttempts()) {
            result.completeExceptionally(new LockBackendException(lockName, ZooKeeperBackend.NAME,
                    "gave up after " + (attempt + 1) + " attempts to enqueue: connection kept failing", cause));
            return;
        }
        // From the second retry on, back off: a handle whose session has expired fails at once
        // until Curator has replaced it, which would burn every attempt in a few microseconds.
        java.util.concurrent.Executor later = attempt == 0 ? Runnable::run
                : CompletableFuture.delayedExecutor(backoffMillis(attempt), java.util.concurrent.TimeUnit.MILLISECONDS);
        CompletableFuture.runAsync(() -> { }, later)
                .thenCompose(x -> backend.whenConnected())
                .thenCompose(x -> findOwnEntry(lockName, id))
                .whenComplete((found, err) -> {
                    if (err != null) {
                        // findOwnEntry already retried through connection losses; the engine looks
                        // for the entry once more when it cleans up after this failure.
                        result.completeExceptionally(new LockBackendException(lockName, ZooKeeperBackend.NAME,
                                "could not look for its own queue node after a lost reply: " + rootMessage(err), err));
                    } else if (found.isPresent()) {
                        log.debug("[lock={} state=QUEUED] adopted own node {} after a lost reply", lockName,
                                found.get().key());
                        remember(found.get().key(), request);
                        readPosition(found.get(), result);
                    } else {
                        createAndRead(request, result, attempt + 1);
                    }
                });
    }

    private CompletableFuture<Void> ensureParent(String parent, String lockName, byte[] data) {
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
                    .forPath(parent, data);
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
        if (WATCH_CHILDREN.equals(waiting.predecessor())) {
            watchChildren(waiting, result);
        } else {
            watchPredecessor(waiting, result);
        }
        return result;
    }

    private void watchPredecessor(Position waiting, CompletableFuture<Position> result) {
        QueueEntry entry = waiting.entry();
        ZooKeeper zk = sessionOf(entry, result);
        if (zk == null) {
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
                case OK -> complete(result, entry, children);
                case NONODE -> result.completeExceptionally(new EntryLostException(entry, "its lock node is gone"));
                case CONNECTIONLOSS, OPERATIONTIMEOUT -> retryWhenConnected(result, () -> readPosition(entry, result));
                case SESSIONEXPIRED -> result.completeExceptionally(new EntryLostException(entry, "session expired"));
                default -> result.completeExceptionally(failure(entry.lockName(), "reading " + parent, code));
            }
        }, null);
    }

    /** Keeps what {@link #position} needs beyond the node name: only semaphores need it (the total). */
    private void remember(String key, LockRequest request) {
        if (request.mode() == LockMode.SEMAPHORE) {
            requests.put(key, request);
        }
    }

    private void complete(CompletableFuture<Position> result, QueueEntry entry, List<String> children) {
        try {
            result.complete(position(entry, children));
        } catch (EntryLostException e) {
            requests.remove(entry.key());
            result.completeExceptionally(e);
        }
    }

    /** Where {@code entry} stands among {@code children}, by the rule of its mode. */
    private Position position(QueueEntry entry, List<String> children) {
        String own = entry.key().substring(entry.key().lastIndexOf('/') + 1);
        if (!children.contains(own)) {
            throw new EntryLostException(entry, "it is no longer among the lock's children");
        }
        LockNodes.Node node = LockNodes.parse(own);
        LockRequest request = requests.get(entry.key());
        List<LockNodes.Node> ahead = LockNodes.ahead(node, children);
        String waitFor = switch (node.mode()) {
            case EXCLUSIVE -> ahead.isEmpty() ? null : ahead.get(0).name();
            // A writer also waits for a downgrade's read node behind it: that reader is inside.
            case WRITE -> !ahead.isEmpty() ? ahead.get(0).name() : LockNodes.downgradeRead(children);
            // A downgrade's read node was created while its own write node existed, so it is
            // granted; any other reader waits for the nearest writer ahead, never for readers.
            case READ -> node.downgrade() ? null : ahead.stream()
                    .filter(n -> n.mode() == LockMode.WRITE)
                    .map(LockNodes.Node::name)
                    .findFirst()
                    .orElse(null);
            case SEMAPHORE -> {
                int max = request == null ? Integer.MAX_VALUE : request.maxPermits();
                int taken = ahead.stream().mapToInt(LockNodes.Node::permits).sum();
                yield taken + node.permits() <= max ? null : WATCH_CHILDREN;
            }
        };
        return waitFor == null
                ? Position.granted(new Grant(entry, entry.token(), Long.MAX_VALUE))
                : Position.waiting(entry, waitFor);
    }

    /**
     * A semaphore waiter is unblocked by any holder ahead leaving, not only its predecessor, so it
     * watches the children (semaphores trade the no-herd rule for that; locks keep it).
     */
    private void watchChildren(Position waiting, CompletableFuture<Position> result) {
        QueueEntry entry = waiting.entry();
        ZooKeeper zk = sessionOf(entry, result);
        if (zk == null) {
            return;
        }
        Watcher watcher = event -> {
            if (event.getType() == Watcher.Event.EventType.None) {
                if (event.getState() == Watcher.Event.KeeperState.Expired
                        || event.getState() == Watcher.Event.KeeperState.Closed) {
                    result.completeExceptionally(new EntryLostException(entry, "session " + event.getState()));
                }
            } else if (!result.isDone()) {
                watchChildren(waiting, result);
            }
        };
        String parent = parentOf(entry.key());
        zk.getChildren(parent, watcher, (rc, path, ctx, children) -> {
            Code code = Code.get(rc);
            switch (code) {
                case OK -> {
                    try {
                        Position now = position(entry, children);
                        if (now.isGranted()) {
                            result.complete(now);
                        } // else: the watch fires on the next change
                    } catch (EntryLostException e) {
                        requests.remove(entry.key());
                        result.completeExceptionally(e);
                    }
                }
                case NONODE -> result.completeExceptionally(new EntryLostException(entry, "its parent is gone"));
                case CONNECTIONLOSS, OPERATIONTIMEOUT -> retryWhenConnected(result, () -> watchChildren(waiting, result));
                case SESSIONEXPIRED -> result.completeExceptionally(new EntryLostException(entry, "session expired"));
                default -> result.completeExceptionally(failure(entry.lockName(), "watching " + parent, code));
            }
        }, null);
    }

    /**
     * Every client of one semaphore must agree on its total: the first records it in the parent
     * node's data, later ones compare. Disagreement is an IllegalArgumentException, not silent.
     */
    private CompletableFuture<Void> agreeOnPermits(LockRequest request) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        String parent = backend.lockPath(request.lockName());
        byte[] mine = ("permits=" + request.maxPermits()).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        ZooKeeper zk = zkOrFail(done);
        if (zk == null) {
            return done;
        }
        zk.getData(parent, false, (rc, path, ctx, data, stat) -> {
            Code code = Code.get(rc);
            switch (code) {
                case NONODE -> ensureParent(parent, request.lockName(), mine).whenComplete((ok, err) -> {
                    if (err != null) {
                        done.completeExceptionally(err);
                    } else {
                        agreeOnPermits(request).whenComplete((x, e) -> complete(done, e));
                    }
                });
                case OK -> {
                    String recorded = data == null ? "" : new String(data, java.nio.charset.StandardCharsets.UTF_8);
                    if (recorded.isEmpty()) {
                        zk.setData(parent, mine, stat.getVersion(), (rc2, p2, c2, s2) ->
                                agreeOnPermits(request).whenComplete((x, e) -> complete(done, e)), null);
                    } else if (recorded.equals(new String(mine, java.nio.charset.StandardCharsets.UTF_8))) {
                        done.complete(null);
                    } else {
                        done.completeExceptionally(new IllegalArgumentException("semaphore '" + request.lockName()
                                + "' on zookeeper is in use with " + recorded.replace("permits=", "")
                                + " permits; this client opened it with " + request.maxPermits()));
                    }
                }
                case CONNECTIONLOSS, OPERATIONTIMEOUT -> retryWhenConnected(done,
                        () -> agreeOnPermits(request).whenComplete((x, e) -> complete(done, e)));
                default -> done.completeExceptionally(failure(request.lockName(), "reading " + parent, code));
            }
        }, null);
        return done;
    }

    private static void complete(CompletableFuture<Void> done, Throwable error) {
        if (error != null) {
            done.completeExceptionally(error);
        } else {
            done.complete(null);
        }
    }

    // ---- release

    @Override
    public CompletionStage<Void> release(QueueEntry entry) {
        requests.remove(entry.key());
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
        findOwnEntry(lockName, acquisitionId, result, 0);
        return result;
    }

    /**
     * Looks for the acquisition's node among the lock's children. A connection loss while looking
     * is retried once reconnected (bounded by the retry policy), never read as "not found": that
     * would make the caller create a second node behind its own orphan, which then waits for
     * itself until the session ends.
     */
    private void findOwnEntry(String lockName, String acquisitionId, CompletableFuture<Optional<QueueEntry>> result,
            int attempt) {
        ZooKeeper zk = zkOrFail(result);
        if (zk == null) {
            return;
        }
        String parent = backend.lockPath(lockName);
        Runnable retry = () -> retryFind(lockName, acquisitionId, result, attempt);
        zk.getChildren(parent, false, (rc, path, ctx, children, stat) -> {
            Code code = Code.get(rc);
            switch (code) {
                case OK -> {
                    // Read now, after a reply: a fresh handle has no session id before it connects.
                    long session = zk.getSessionId();
                    List<String> mine =
                            children.stream().filter(c -> LockNodes.belongsTo(c, acquisitionId)).toList();
                    checkOwners(zk, lockName, acquisitionId, parent, mine, 0, session, result, retry);
                }
                // No parent, or the session is gone with its ephemeral nodes: nothing of ours is left.
                case NONODE, SESSIONEXPIRED -> result.complete(Optional.empty());
                case CONNECTIONLOSS, OPERATIONTIMEOUT -> retry.run();
                default -> result.completeExceptionally(failure(lockName, "reading " + parent, code));
            }
        }, null);
    }

    private void retryFind(String lockName, String acquisitionId, CompletableFuture<Optional<QueueEntry>> result,
            int attempt) {
        if (attempt >= maxAttempts()) {
            result.completeExceptionally(new LockBackendException(lockName, ZooKeeperBackend.NAME,
                    "gave up looking for its own queue node after " + (attempt + 1)
                            + " attempts: the connection kept failing", null));
            return;
        }
        retryWhenConnected(result, () -> findOwnEntry(lockName, acquisitionId, result, attempt + 1));
    }

    /** Adopts the first candidate whose ephemeral owner is the current session. */
    private void checkOwners(ZooKeeper zk, String lockName, String id, String parent, List<String> candidates, int i,
            long session, CompletableFuture<Optional<QueueEntry>> result, Runnable retry) {
        if (i >= candidates.size()) {
            result.complete(Optional.empty());
            return;
        }
        String path = parent + "/" + candidates.get(i);
        zk.exists(path, false, (rc, p, ctx, stat) -> {
            Code code = Code.get(rc);
            if (code == Code.CONNECTIONLOSS || code == Code.OPERATIONTIMEOUT) {
                retry.run(); // unknown, not absent: look again once reconnected
            } else if (code == Code.OK && stat != null && stat.getEphemeralOwner() == session) {
                result.complete(Optional.of(new QueueEntry(lockName, id, path, session, stat.getCzxid())));
            } else {
                if (stat != null) {
                    log.debug("[lock={} state=QUEUED] not adopting {}: owned by session 0x{}, not 0x{}", lockName, path,
                            Long.toHexString(stat.getEphemeralOwner()), Long.toHexString(session));
                }
                checkOwners(zk, lockName, id, parent, candidates, i + 1, session, result, retry);
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

    /**
     * The handle of the session that owns {@code entry}, or null after failing {@code result}: a
     * waiter whose session has been replaced has lost its entry.
     */
    private ZooKeeper sessionOf(QueueEntry entry, CompletableFuture<Position> result) {
        ZooKeeper zk = zkOrFail(result);
        if (zk != null && zk.getSessionId() != entry.session()) {
            result.completeExceptionally(new EntryLostException(entry, "its session ended"));
            return null;
        }
        return zk;
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

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && (t instanceof java.util.concurrent.CompletionException
                || t instanceof java.util.concurrent.ExecutionException)) {
            t = t.getCause();
        }
        return t.getMessage();
    }

    /** The retry policy's exponential backoff for the n-th retry (n >= 1). */
    private long backoffMillis(int attempt) {
        long base = backend.options.retryPolicy().baseSleep().toMillis();
        long max = backend.options.retryPolicy().maxSleep().toMillis();
        return Math.min(max, base << Math.min(20, attempt - 1));
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
