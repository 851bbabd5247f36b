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
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Op;
import org.apache.zookeeper.OpResult;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.Watcher.WatcherType;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;
import org.apache.zookeeper.proto.Create2Response;
import org.jspecify.annotations.Nullable;
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
 * creation zxid, which increases across the whole ensemble in queue order, and across restarts
 * that keep the data directory. A restart that lost the data starts the zxids again near zero, so
 * tokens then fall below earlier ones; there is no guard here, because only state that outlives
 * the server's data could provide one (the namespace node is lost with it), and a clock floor
 * would break the order zxids keep across leader changes. The README says so.
 *
 * <p>Failure: the create and the first {@code getChildren} are pipelined (ZooKeeper answers one
 * session's requests in order), so an uncontended acquire waits one round trip. When this session's
 * previous node under the same parent was alone and is deleted, and every transaction the ensemble
 * made since was one of this session's own writes, none of them a create under that parent, the
 * create alone shows that the new node is alone ({@link AloneLedger}), and no read is sent. A create whose
 * reply is lost is never blindly retried: after reconnecting, the client looks for a child carrying
 * its acquisition id and adopts it only if that child's ephemeral owner is the current session (a
 * node of an expired session is about to vanish, and adopting it let two clients hold a Curator
 * lock at once); otherwise it creates a new one. Deletes are retried through connection drops until
 * the node is gone or its session has ended here; a node whose session this client gave up (Curator
 * does so after a session timeout out of reach, while a restarted server still has the session) is
 * deleted from the next session by {@link LeftoverNodes}, not left to the server's expiry.
 *
 * <p>Concurrency: callbacks only complete futures; nothing here blocks. The uncontended cycle's
 * requests (the create, its pipelined {@code getChildren}, the delete) are answered on the client's
 * I/O thread ({@link DirectZooKeeper}: one thread hand-off less per reply); every other request and
 * every watch on the client's event thread. Each of those two threads sees its replies in the
 * order the server answered them.
 */
final class ZooKeeperLockProtocol implements LockProtocol {
    private static final Logger log = LoggerFactory.getLogger(ZooKeeperLockProtocol.class);

    /** What a semaphore waiter waits for: any change among the children. */
    static final String WATCH_CHILDREN = "*";

    private final ZooKeeperBackend backend;
    /** The request behind each live semaphore entry of this client, by node name (its total). */
    private final Map<String, LockRequest> requests = new ConcurrentHashMap<>();
    /**
     * Each waiting entry of this client, by node name (unique: it carries the acquisition id): added when a waiting position is handed out,
     * replaced by the watch while one is set, removed when the entry is granted, lost or released.
     * An entry released before its wait started has none, so no watch is set for it.
     */
    private final Map<String, Wait> waits = new ConcurrentHashMap<>();
    /** Every stage handed out and not yet completed, with what completes it if the backend closes. */
    private final Map<CompletableFuture<?>, Runnable> inFlight = new ConcurrentHashMap<>();
    /** Nodes given up while the server could not be reached, deleted once it can (issue 17). */
    final LeftoverNodes leftovers;

    /**
     * A waiting entry's watch; all null while no watch is set (between a watch firing and the next
     * one). Compared by identity.
     */
    private static final class Wait {
        final @Nullable ZooKeeper zk;
        final @Nullable String path;
        final @Nullable WatcherType type;
        final @Nullable Watcher watcher;
        final @Nullable CompletableFuture<Position> result;

        Wait(
                @Nullable ZooKeeper zk,
                @Nullable String path,
                @Nullable WatcherType type,
                @Nullable Watcher watcher,
                @Nullable CompletableFuture<Position> result) {
            this.zk = zk;
            this.path = path;
            this.type = type;
            this.watcher = watcher;
            this.result = result;
        }

        static Wait idle() {
            return new Wait(null, null, null, null, null);
        }
    }

    /**
     * How long a grant must have been held before its node is watched for a forced delete: holds
     * shorter than this (the uncontended cycle, W1) send no request for it.
     */
    private static final long GUARD_AFTER_NANOS = TimeUnit.MILLISECONDS.toNanos(200);
    /** How often the granted nodes are looked at for one to watch, while there are any. */
    private static final long GUARD_SWEEP_MILLIS = 100;

    /** A granted entry of this client, until it is released or found deleted. */
    private static final class Held {
        final QueueEntry entry;
        final long grantedAt;
        /** Whether a watch on its node is set or being set. */
        volatile boolean watched;

        Held(QueueEntry entry, long grantedAt) {
            this.entry = entry;
            this.grantedAt = grantedAt;
        }
    }

    /**
     * The granted entries of this client, by node name: a node deleted while its entry is here was
     * deleted by someone else (an operator's {@code dlock release --force}), since {@link #release}
     * takes the entry out before it deletes. Each one held for {@link #GUARD_AFTER_NANOS} gets a
     * {@code getData} watch on its node (set by {@link #guard}, once; the server's NodeDeleted
     * event costs no request), so the holder hears of a forced release within about 300 ms of the
     * grant or at once after it, not at its next renewal.
     */
    private final Map<String, Held> held = new ConcurrentHashMap<>();

    private final java.util.concurrent.atomic.AtomicBoolean guarding = new java.util.concurrent.atomic.AtomicBoolean();

    ZooKeeperLockProtocol(ZooKeeperBackend backend) {
        this.backend = backend;
        this.leftovers = new LeftoverNodes(backend);
    }

    // ---- enqueue

    @Override
    public CompletionStage<Position> enqueue(LockRequest request) {
        CompletableFuture<Position> result = tracked(new CompletableFuture<>(), false, null);
        if (result.isDone()) {
            return result;
        }
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

    private void createAndRead(
            LockRequest request, CompletableFuture<Position> result, int attempt, boolean downgrade) {
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
        Created created = new Created();
        String prefix = parent + "/" + LockNodes.prefix(id, request.mode(), request.permits());
        if (zk instanceof DirectZooKeeper direct) {
            boolean tryAlone = request.mode() == LockMode.EXCLUSIVE
                    && request.grantedDespite() == null
                    && direct.mayBeAlone(lockName);
            direct.create(
                    prefix,
                    lockName,
                    backend.nodeData,
                    backend.acl,
                    CreateMode.EPHEMERAL_SEQUENTIAL,
                    (rc, r, writes, alone) -> {
                        created.fill(rc, r, writes);
                        if (tryAlone) {
                            createdMaybeAlone(request, result, attempt, direct, parent, created, alone);
                        }
                    });
            if (!tryAlone) {
                // Pipelined: the getChildren is answered after the create, so it already lists the
                // new child, and its reply is handled after the create's (one session answers in order).
                readQueue(request, result, attempt, direct, parent, created);
            }
        } else {
            zk.create(
                    prefix,
                    backend.nodeData,
                    backend.acl,
                    CreateMode.EPHEMERAL_SEQUENTIAL,
                    (rc, path, ctx, name, stat) -> {
                        created.rc = rc;
                        created.name = name;
                        created.stat = stat;
                    },
                    null);
            zk.getChildren(
                    parent,
                    false,
                    (rc, path, ctx, children, stat) ->
                            createdAndRead(request, result, attempt, parent, created, rc, children),
                    null);
        }
    }

    /** The reply to a pipelined create, kept for the getChildren's reply that follows it. */
    private static final class Created {
        volatile int rc = Integer.MIN_VALUE;
        volatile @Nullable String name;
        volatile @Nullable Stat stat;

        /** The create's count of this session's writes ({@link AloneLedger#writes}); set before the rc. */
        volatile long writes;

        /** Takes a direct create's reply; the rc last, which the reader checks first. */
        void fill(int code, @Nullable Create2Response r, long writesSoFar) {
            if (r != null) {
                name = r.getPath();
                stat = r.getStat();
            }
            writes = writesSoFar;
            rc = code;
        }
    }

    /**
     * The reply to a create sent without the pipelined read, because this session's last node under
     * the same parent was alone and is deleted, and its writes since may prove the new node alone
     * ({@link AloneLedger}). Proven, it is granted without a read: the uncontended cycle is the
     * floor's create and delete. Otherwise the queue is read, one round trip later than the pipelined
     * read would have answered; the ledger's hint makes that rare while other sessions write.
     */
    private void createdMaybeAlone(
            LockRequest request,
            CompletableFuture<Position> result,
            int attempt,
            DirectZooKeeper direct,
            String parent,
            Created created,
            boolean alone) {
        String name = created.name;
        if (name == null) {
            createdAndRead(request, result, attempt, parent, created, created.rc, null); // the create's code decides
        } else if (alone) {
            createdAndRead(request, result, attempt, parent, created, created.rc, List.of(nodeName(name)));
        } else {
            readQueue(request, result, attempt, direct, parent, created);
        }
    }

    /**
     * Reads the queue after {@code created}'s create (pipelined or not) and hands out its position;
     * a node that was its parent's only child is recorded in the ledger ({@link AloneLedger}).
     */
    private void readQueue(
            LockRequest request,
            CompletableFuture<Position> result,
            int attempt,
            DirectZooKeeper direct,
            String parent,
            Created created) {
        direct.getChildren(parent, (rc, children) -> {
            Stat stat = created.stat;
            if (children != null && children.size() == 1 && stat != null) {
                direct.readAlone(request.lockName(), stat.getCzxid(), created.writes);
            }
            createdAndRead(request, result, attempt, parent, created, rc, children);
        });
    }

    private void createdAndRead(
            LockRequest request,
            CompletableFuture<Position> result,
            int attempt,
            String parent,
            Created c,
            int rc,
            @Nullable List<String> children) {
        String lockName = request.lockName();
        if (c.rc == Integer.MIN_VALUE) {
            throw new IllegalStateException("create unanswered"); // one session answers in order
        }
        Code createCode = Code.get(c.rc);
        switch (createCode) {
            case OK -> {
                String name = java.util.Objects.requireNonNull(c.name, "created path");
                Stat createdStat = java.util.Objects.requireNonNull(c.stat, "created stat");
                // The node's owner, not zk.getSessionId() read before the create: a handle
                // that Curator has just created after an expiry reports session 0 until it
                // connects, and an entry recorded with 0 looked "ended" to every later check,
                // so the waiter queued again behind its own orphaned node (ZooKeeperFaultIT).
                QueueEntry entry = new QueueEntry(
                        lockName,
                        request.acquisitionId(),
                        LockNodes.key(nodeName(name), request.acquisitionId()),
                        createdStat.getEphemeralOwner(),
                        createdStat.getCzxid());
                remember(entry, request);
                if (Code.get(rc) == Code.OK && children != null) {
                    complete(result, entry, children);
                } else {
                    readPosition(entry, result, 0);
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
            case CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONEXPIRED, SESSIONMOVED -> afterConnectionTrouble(
                    request, result, attempt, null);
            default -> result.completeExceptionally(failure(lockName, "creating a node under " + parent, createCode));
        }
    }

    /**
     * A read under this thread's own write lock (a downgrade): the read node is created only if the
     * write node still exists, in one transaction, so a flagged read node always means "granted,
     * and no other writer may enter while it lives" (see {@link #position}). Its node may land
     * behind writers queued for the write lock; they wait for it. If the write node is already
     * gone, this is an ordinary read.
     */
    private void createDowngrade(
            LockRequest request, CompletableFuture<Position> result, int attempt, ZooKeeper zk, String parent) {
        String lockName = request.lockName();
        List<Op> ops = List.of(
                Op.check(parent + "/" + request.grantedDespite(), -1),
                Op.create(
                        parent + "/" + LockNodes.downgradePrefix(request.acquisitionId()),
                        backend.nodeData,
                        backend.acl,
                        CreateMode.EPHEMERAL_SEQUENTIAL));
        zk.multi(
                ops,
                (rc, path, ctx, results) -> {
                    Code code = Code.get(rc);
                    switch (code) {
                        case OK -> readCreated(
                                request,
                                result,
                                attempt,
                                zk,
                                parent,
                                ((OpResult.CreateResult) results.get(1)).getPath());
                        case NONODE -> createAndRead(request, result, attempt, false);
                        case CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONEXPIRED, SESSIONMOVED -> afterConnectionTrouble(
                                request, result, attempt, null);
                        default -> result.completeExceptionally(
                                failure(lockName, "creating a node under " + parent, code));
                    }
                },
                null);
    }

    /** Reads a node created in a transaction (which answers without its stat) and its position. */
    private void readCreated(
            LockRequest request,
            CompletableFuture<Position> result,
            int attempt,
            ZooKeeper zk,
            String parent,
            String name) {
        AtomicReference<Stat> created = new AtomicReference<>();
        zk.exists(name, false, (rc, path, ctx, stat) -> created.set(stat), null);
        // Pipelined: answered after the exists.
        zk.getChildren(
                parent,
                false,
                (rc, path, ctx, children, stat) -> {
                    Stat node = created.get();
                    if (Code.get(rc) != Code.OK || node == null) {
                        afterConnectionTrouble(request, result, attempt, null); // adopts the node if it still lives
                        return;
                    }
                    QueueEntry entry = new QueueEntry(
                            request.lockName(),
                            request.acquisitionId(),
                            LockNodes.key(nodeName(name), request.acquisitionId()),
                            node.getEphemeralOwner(),
                            node.getCzxid());
                    remember(entry, request);
                    complete(result, entry, children);
                },
                null);
    }

    /**
     * The create's outcome is unknown: once reconnected, adopt our node if this session has it,
     * else create one. Bounded by the retry policy's attempts, the lookup's included, so the
     * caller is answered; after giving up, the node this session may still have is found and
     * removed by the engine's cleanup ({@link #findOwnEntry}, which does not give up).
     */
    private void afterConnectionTrouble(
            LockRequest request, CompletableFuture<Position> result, int attempt, @Nullable Throwable cause) {
        String lockName = request.lockName();
        String id = request.acquisitionId();
        if (result.isDone() || backend.isClosed()) {
            return; // answered already (the close completed it)
        }
        if (attempt >= maxAttempts()) {
            result.completeExceptionally(new LockBackendException(
                    lockName,
                    ZooKeeperBackend.NAME,
                    "gave up after " + (attempt + 1) + " attempts to enqueue: connection kept failing",
                    cause));
            return;
        }
        retry(attempt, () -> {
            CompletableFuture<Optional<QueueEntry>> lookup = new CompletableFuture<>();
            lookup(lockName, id, lookup, null, attempt + 1, maxAttempts());
            lookup.whenComplete((found, err) -> {
                if (err != null) {
                    result.completeExceptionally(new LockBackendException(
                            lockName,
                            ZooKeeperBackend.NAME,
                            "could not look for its own queue node after a lost reply: " + rootMessage(err),
                            err));
                } else if (found.isPresent()) {
                    log.debug(
                            "[lock={} state=QUEUED] adopted own node {} after a lost reply",
                            lockName,
                            LockNodes.nodeName(found.get()));
                    remember(found.get(), request);
                    readPosition(found.get(), result, 0);
                } else {
                    createAndRead(request, result, attempt + 1);
                }
            });
        });
    }

    private CompletableFuture<Void> ensureParent(String parent, String lockName, byte[] data) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        if (DirectZooKeeper.replying()) { // Curator may wait for its connection state: never there
            ForkJoinPool.commonPool().execute(() -> ensureParent(parent, lockName, data, done));
        } else {
            ensureParent(parent, lockName, data, done);
        }
        return done;
    }

    private void ensureParent(String parent, String lockName, byte[] data, CompletableFuture<Void> done) {
        try {
            backend.curator
                    .create()
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
            done.completeExceptionally(new LockBackendException(
                    lockName, ZooKeeperBackend.NAME, "creating " + parent + " failed: " + e, e));
        }
    }

    // ---- waiting

    @Override
    public CompletionStage<Position> awaitTurn(Position waiting) {
        CompletableFuture<Position> result = tracked(new CompletableFuture<>(), false, null);
        if (result.isDone()) {
            return result;
        }
        if (WATCH_CHILDREN.equals(waiting.predecessor())) {
            watchChildren(waiting, result, 0);
        } else {
            watchPredecessor(waiting, result, 0);
        }
        return result;
    }

    /**
     * Sets a {@code getData} watch on the predecessor, tracked in {@link #waits} so that a release
     * of the entry removes it; if the entry was released already, sets none.
     */
    private void watchPredecessor(Position waiting, CompletableFuture<Position> result, int attempt) {
        QueueEntry entry = waiting.entry();
        String key = LockNodes.nodeName(entry);
        ZooKeeper zk = sessionOf(entry, result, attempt, () -> watchPredecessor(waiting, result, attempt + 1));
        if (zk == null) {
            return;
        }
        String predecessor = backend.lockPath(entry.lockName()) + "/" + waiting.predecessor();
        Wait[] self = new Wait[1];
        Watcher watcher = event -> {
            Wait mine = self[0];
            switch (event.getType()) {
                case NodeDeleted -> {
                    if (waits.replace(key, mine, Wait.idle())) { // else released: nothing to do
                        readPosition(entry, result, 0);
                    }
                }
                case DataWatchRemoved, ChildWatchRemoved -> {} // removed by release
                case None -> {
                    // Disconnected: ZooKeeper re-registers the watch when it reconnects within
                    // the session. Expired: our node is gone too.
                    if (event.getState() == Watcher.Event.KeeperState.Expired
                            || event.getState() == Watcher.Event.KeeperState.Closed) {
                        loseSession(entry, result, "session " + event.getState());
                    }
                }
                default -> { // data changed: the one-shot watch is spent; watch again if still waiting
                    if (waits.get(key) == mine) {
                        watchPredecessor(waiting, result, 0);
                    }
                }
            }
        };
        Wait mine = new Wait(zk, predecessor, WatcherType.Data, watcher, result);
        self[0] = mine;
        if (!startWait(entry, mine, result)) {
            return;
        }
        zk.getData(
                predecessor,
                watcher,
                (rc, path, ctx, data, stat) -> {
                    Code code = Code.get(rc);
                    switch (code) {
                        case OK -> {
                            if (waits.get(key) != mine) {
                                removeWatch(mine); // released while the watch was being set
                            }
                        }
                        case NONODE -> { // already gone: no watch was left behind
                            if (waits.replace(key, mine, Wait.idle())) {
                                readPosition(entry, result, 0);
                            }
                        }
                        case CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONMOVED -> retry(
                                attempt, () -> watchPredecessor(waiting, result, attempt + 1));
                        case SESSIONEXPIRED -> loseSession(entry, result, "session expired");
                        default -> fail(entry, result, failure(entry.lockName(), "watching " + predecessor, code));
                    }
                },
                null);
    }

    /**
     * Replaces the entry's current wait by {@code mine}; false (and {@code result} failed) if the
     * entry has none: it was released (withdrawn) or lost, and no watch must be set for it.
     */
    private boolean startWait(QueueEntry entry, Wait mine, CompletableFuture<Position> result) {
        String key = LockNodes.nodeName(entry);
        while (true) {
            Wait current = waits.get(key);
            if (current == null) {
                result.completeExceptionally(new EntryLostException(entry, "withdrawn by this client"));
                return false;
            }
            if (waits.replace(key, current, mine)) {
                return true;
            }
        }
    }

    /** Removes a wait's watch from the client (local: also when the server cannot be reached). */
    private static void removeWatch(Wait wait) {
        ZooKeeper zk = wait.zk;
        String path = wait.path;
        WatcherType type = wait.type;
        Watcher watcher = wait.watcher;
        if (zk == null || path == null || type == null || watcher == null) {
            return; // an idle wait: no watch is set
        }
        try {
            zk.removeWatches(
                    path,
                    watcher,
                    type,
                    true,
                    (rc, p, ctx) -> {
                        // NOWATCHER: it fired or was removed already. Anything else was removed locally.
                    },
                    null);
        } catch (RuntimeException e) {
            log.debug("removing the watch on {} failed: {}", path, e.toString());
        }
    }

    /** Re-reads the queue and reports where {@code entry} stands now. */
    private void readPosition(QueueEntry entry, CompletableFuture<Position> result, int attempt) {
        ZooKeeper zk = sessionOf(entry, result, attempt, () -> readPosition(entry, result, attempt + 1));
        if (zk == null) {
            return;
        }
        String parent = backend.lockPath(entry.lockName());
        zk.getChildren(
                parent,
                false,
                (rc, path, ctx, children, stat) -> {
                    Code code = Code.get(rc);
                    switch (code) {
                        case OK -> complete(result, entry, children);
                        case NONODE -> lose(entry, result, "its lock node is gone");
                        case CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONMOVED -> retry(
                                attempt, () -> readPosition(entry, result, attempt + 1));
                        case SESSIONEXPIRED -> loseSession(entry, result, "session expired");
                        default -> fail(entry, result, failure(entry.lockName(), "reading " + parent, code));
                    }
                },
                null);
    }

    /** Keeps what {@link #position} needs beyond the node name: only semaphores need it (the total). */
    private void remember(QueueEntry entry, LockRequest request) {
        if (request.mode() == LockMode.SEMAPHORE) {
            requests.put(LockNodes.nodeName(entry), request);
        }
    }

    /**
     * Hands out the entry's position among {@code children}. A waiting entry is registered in
     * {@link #waits} before the engine sees it, so that a release racing the engine's next
     * {@code awaitTurn} is noticed there.
     */
    private void complete(CompletableFuture<Position> result, QueueEntry entry, List<String> children) {
        String key = LockNodes.nodeName(entry);
        Position now;
        try {
            now = position(entry, key, children);
        } catch (EntryLostException e) {
            forget(key);
            result.completeExceptionally(e);
            return;
        }
        handOut(result, now, key);
    }

    /** Hands {@code now} to the engine; {@code key} is its entry's node name. */
    private void handOut(CompletableFuture<Position> result, Position now, String key) {
        if (now.isGranted()) {
            waits.remove(key);
            result.complete(now);
            return;
        }
        Wait idle = Wait.idle();
        Wait prior = waits.putIfAbsent(key, idle);
        if (!result.complete(now) && prior == null) {
            waits.remove(key, idle); // nobody will wait with it
        }
    }

    /** The entry is gone (its session ended, or it left the queue): forget it and tell the engine. */
    private void lose(QueueEntry entry, CompletableFuture<Position> result, String why) {
        forget(LockNodes.nodeName(entry));
        result.completeExceptionally(new EntryLostException(entry, why));
    }

    /**
     * The entry's session is over in this client (expired, or given up by Curator while the server
     * was out of reach): its node may still be on the server, where only the session's expiry would
     * remove it, and a server restart starts that expiry again. So it is deleted from the next
     * session (see {@link LeftoverNodes}).
     */
    private void loseSession(QueueEntry entry, CompletableFuture<Position> result, String why) {
        leftovers.add(entry);
        lose(entry, result, why);
    }

    /** A wait that cannot go on: its watch goes too. */
    private void fail(QueueEntry entry, CompletableFuture<Position> result, Throwable error) {
        Wait w = waits.remove(LockNodes.nodeName(entry));
        if (w != null) {
            removeWatch(w);
        }
        result.completeExceptionally(error);
    }

    private void forget(String key) {
        requests.remove(key);
        Wait w = waits.remove(key);
        if (w != null) {
            removeWatch(w);
        }
    }

    /** Where {@code entry}, whose node is {@code own}, stands among {@code children}, by the rule of its mode. */
    private Position position(QueueEntry entry, String own, List<String> children) {
        if (!children.contains(own)) {
            throw new EntryLostException(entry, "it is no longer among the lock's children");
        }
        LockNodes.Node node = java.util.Objects.requireNonNull(LockNodes.parse(own), own); // our own node
        String waitFor =
                switch (node.mode()) {
                    case EXCLUSIVE -> LockNodes.nearestAhead(node, children);
                        // A writer also waits for a downgrade's read node behind it: that reader is inside.
                    case WRITE -> {
                        String ahead = LockNodes.nearestAhead(node, children);
                        yield ahead != null ? ahead : LockNodes.downgradeRead(children);
                    }
                        // A downgrade's read node was created while its own write node existed, so it is
                        // granted; any other reader waits for the nearest writer ahead, never for readers.
                    case READ -> node.downgrade()
                            ? null
                            : LockNodes.ahead(node, children).stream()
                                    .filter(n -> n.mode() == LockMode.WRITE)
                                    .map(LockNodes.Node::name)
                                    .findFirst()
                                    .orElse(null);
                    case SEMAPHORE -> {
                        LockRequest request = requests.get(own);
                        int max = request == null ? Integer.MAX_VALUE : request.maxPermits();
                        int taken = LockNodes.ahead(node, children).stream()
                                .mapToInt(LockNodes.Node::permits)
                                .sum();
                        yield taken + node.permits() <= max ? null : WATCH_CHILDREN;
                    }
                };
        if (waitFor != null) {
            return Position.waiting(entry, waitFor);
        }
        long now = backend.options.ticker().read();
        held.put(own, new Held(entry, now));
        if (!guarding.get() && guarding.compareAndSet(false, true)) {
            scheduleGuard();
        }
        return Position.granted(new Grant(entry, entry.token(), checkedUntil(now)));
    }

    private void scheduleGuard() {
        CompletableFuture.delayedExecutor(GUARD_SWEEP_MILLIS, TimeUnit.MILLISECONDS)
                .execute(this::guard);
    }

    /**
     * Watches the node of each grant held for {@link #GUARD_AFTER_NANOS} and not watched yet; runs
     * every {@link #GUARD_SWEEP_MILLIS} while this client holds grants. Never blocks.
     */
    private void guard() {
        if (backend.isClosed()) {
            return;
        }
        long now = backend.options.ticker().read();
        ZooKeeper zk = null;
        for (Map.Entry<String, Held> e : held.entrySet()) {
            Held h = e.getValue();
            if (h.watched || now - h.grantedAt < GUARD_AFTER_NANOS) {
                continue;
            }
            if (zk == null) {
                try {
                    zk = backend.zk();
                } catch (RuntimeException down) {
                    break; // tried again at the next sweep
                }
            }
            if (zk.getSessionId() != h.entry.session()) {
                held.remove(e.getKey(), h); // its session ended: the engine loses it as such
                continue;
            }
            h.watched = true;
            watchHeld(zk, e.getKey(), h);
        }
        guarding.set(false);
        if (!held.isEmpty() && guarding.compareAndSet(false, true)) {
            scheduleGuard();
        }
    }

    /** Sets a {@code getData} watch on a held node (none is left behind if it is already gone). */
    private void watchHeld(ZooKeeper zk, String node, Held h) {
        String path = path(h.entry);
        Watcher watcher = event -> {
            switch (event.getType()) {
                case NodeDeleted -> deletedByOther(node, h, path);
                case None -> {} // connection events: the client keeps the watch, the engine the state
                default -> h.watched = false; // fired for something else: watched again at the next sweep
            }
        };
        zk.getData(
                path,
                watcher,
                (rc, p, ctx, data, stat) -> {
                    if (rc == Code.NONODE.intValue()) {
                        deletedByOther(node, h, path);
                    } else if (rc != Code.OK.intValue()) {
                        h.watched = false; // connection trouble: tried again at the next sweep
                    }
                },
                null);
    }

    /** A held node is gone while its entry was still held here: removed by force. */
    private void deletedByOther(String node, Held h, String path) {
        if (held.remove(node, h)) {
            log.debug(
                    "[lock={} state=HELD] node {} was deleted by someone else: a forced release",
                    h.entry.lockName(),
                    path);
            backend.forcedListener.accept(h.entry);
        }
    }

    /**
     * A grant's validity. The session keeps the node, but an operator's forced release ({@code dlock
     * release --force}) deletes it under a live holder: with renewal on, the grant is given the
     * lease time, so that the engine's renewal ({@link #renew}) checks every third of it that the
     * node is still there, and a holder whose node is gone loses its lease ({@code onLost}). With
     * renewal off, validity is the session's alone, as before.
     */
    private long checkedUntil(long now) {
        return backend.options.renewal() ? now + backend.options.leaseTime().toNanos() : Long.MAX_VALUE;
    }

    /**
     * Checks that the granted node still exists (one {@code exists}, no watch left behind). Its
     * absence, while the session lives, means it was deleted by someone else (a forced release):
     * {@link EntryLostException}. Without a reply (connection lost, session moving) the grant is
     * extended anyway, since its safety is the session's: the engine's suspension bound ends it if
     * the connection does not come back in time.
     */
    @Override
    public CompletionStage<Grant> renew(Grant grant) {
        QueueEntry entry = grant.entry();
        long now = backend.options.ticker().read();
        Grant extended = new Grant(entry, grant.fencingToken(), checkedUntil(now));
        CompletableFuture<Grant> result = new CompletableFuture<>();
        ZooKeeper zk;
        try {
            zk = backend.zk();
        } catch (RuntimeException e) {
            return CompletableFuture.completedFuture(extended);
        }
        zk.exists(
                path(entry),
                false,
                (rc, path, ctx, stat) -> {
                    if (rc == Code.NONODE.intValue()) {
                        result.completeExceptionally(new EntryLostException(
                                entry,
                                "its node " + path + " was deleted while its session lives (a forced release?)"));
                    } else {
                        result.complete(extended);
                    }
                },
                null);
        return result;
    }

    /**
     * A semaphore waiter is unblocked by any holder ahead leaving, not only its predecessor, so it
     * watches the children (semaphores trade the no-herd rule for that; locks keep it).
     */
    private void watchChildren(Position waiting, CompletableFuture<Position> result, int attempt) {
        QueueEntry entry = waiting.entry();
        String key = LockNodes.nodeName(entry);
        ZooKeeper zk = sessionOf(entry, result, attempt, () -> watchChildren(waiting, result, attempt + 1));
        if (zk == null) {
            return;
        }
        String parent = backend.lockPath(entry.lockName());
        Wait[] self = new Wait[1];
        Watcher watcher = event -> {
            Wait mine = self[0];
            switch (event.getType()) {
                case None -> {
                    if (event.getState() == Watcher.Event.KeeperState.Expired
                            || event.getState() == Watcher.Event.KeeperState.Closed) {
                        loseSession(entry, result, "session " + event.getState());
                    }
                }
                case DataWatchRemoved, ChildWatchRemoved -> {} // removed by release
                default -> {
                    if (!result.isDone() && waits.get(key) == mine) {
                        watchChildren(waiting, result, 0);
                    }
                }
            }
        };
        Wait mine = new Wait(zk, parent, WatcherType.Children, watcher, result);
        self[0] = mine;
        if (!startWait(entry, mine, result)) {
            return;
        }
        zk.getChildren(
                parent,
                watcher,
                (rc, path, ctx, children) -> {
                    Code code = Code.get(rc);
                    switch (code) {
                        case OK -> {
                            if (waits.get(key) != mine) {
                                removeWatch(mine); // released while the watch was being set
                                return;
                            }
                            Position now;
                            try {
                                now = position(entry, key, children);
                            } catch (EntryLostException e) {
                                forget(key);
                                result.completeExceptionally(e);
                                return;
                            }
                            if (now.isGranted()) {
                                forgetWait(key, mine);
                                result.complete(now);
                            } // else: the watch fires on the next change
                        }
                        case NONODE -> lose(entry, result, "its parent is gone");
                        case CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONMOVED -> retry(
                                attempt, () -> watchChildren(waiting, result, attempt + 1));
                        case SESSIONEXPIRED -> loseSession(entry, result, "session expired");
                        default -> fail(entry, result, failure(entry.lockName(), "watching " + parent, code));
                    }
                },
                null);
    }

    /** Granted while its children watch is still set: the watch goes. */
    private void forgetWait(String key, Wait mine) {
        if (waits.remove(key, mine)) {
            removeWatch(mine);
        }
    }

    /**
     * Every client of one semaphore must agree on its total: the first records it in the parent
     * node's data, later ones compare. Disagreement is an IllegalArgumentException, not silent.
     * Nothing is created yet, so connection trouble is retried only within the retry policy.
     */
    private CompletableFuture<Void> agreeOnPermits(LockRequest request) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        agreeOnPermits(request, done, 0);
        return done;
    }

    private void agreeOnPermits(LockRequest request, CompletableFuture<Void> done, int attempt) {
        String parent = backend.lockPath(request.lockName());
        byte[] mine = ("permits=" + request.maxPermits()).getBytes(java.nio.charset.StandardCharsets.UTF_8);
        Runnable again = () -> {
            if (attempt + 1 >= maxAttempts() || backend.isClosed()) {
                done.completeExceptionally(new LockBackendException(
                        request.lockName(),
                        ZooKeeperBackend.NAME,
                        "gave up reading " + parent + " after " + (attempt + 1)
                                + " attempts: the connection kept failing",
                        null));
            } else {
                retry(attempt + 1, () -> agreeOnPermits(request, done, attempt + 1));
            }
        };
        ZooKeeper zk;
        try {
            zk = backend.zk();
        } catch (LockBackendException e) {
            again.run();
            return;
        }
        zk.getData(
                parent,
                false,
                (rc, path, ctx, data, stat) -> {
                    Code code = Code.get(rc);
                    switch (code) {
                        case NONODE -> ensureParent(parent, request.lockName(), mine)
                                .whenComplete((ok, err) -> {
                                    if (err != null) {
                                        done.completeExceptionally(err);
                                    } else {
                                        agreeOnPermits(request, done, attempt);
                                    }
                                });
                        case OK -> {
                            String recorded =
                                    data == null ? "" : new String(data, java.nio.charset.StandardCharsets.UTF_8);
                            if (recorded.isEmpty()) {
                                zk.setData(
                                        parent,
                                        mine,
                                        stat.getVersion(),
                                        (rc2, p2, c2, s2) -> agreeOnPermits(request, done, attempt),
                                        null);
                            } else if (recorded.equals(new String(mine, java.nio.charset.StandardCharsets.UTF_8))) {
                                done.complete(null);
                            } else {
                                done.completeExceptionally(
                                        new IllegalArgumentException("semaphore '" + request.lockName()
                                                + "' on zookeeper is in use with " + recorded.replace("permits=", "")
                                                + " permits; this client opened it with " + request.maxPermits()));
                            }
                        }
                        case CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONMOVED -> again.run();
                        default -> done.completeExceptionally(failure(request.lockName(), "reading " + parent, code));
                    }
                },
                null);
    }

    // ---- release

    /**
     * {@inheritDoc}
     *
     * <p>A waiting entry's watch is removed from the client at once (a withdrawn waiter leaves
     * nothing behind), and its pending {@link #awaitTurn} stage fails with {@link
     * EntryLostException}.
     */
    @Override
    public CompletionStage<Void> release(QueueEntry entry) {
        String node = LockNodes.nodeName(entry);
        held.remove(node); // before the delete: its watch, if any, then sees our own delete
        requests.remove(node);
        Wait w = waits.remove(node);
        if (w != null) {
            removeWatch(w);
            if (w.result != null) {
                w.result.completeExceptionally(new EntryLostException(entry, "withdrawn by this client"));
            }
        }
        CompletableFuture<Void> done = tracked(new CompletableFuture<>(), true, null);
        if (!done.isDone()) {
            delete(entry, backend.nodePath(entry.lockName(), node), done, 0);
        }
        return done;
    }

    /**
     * Deletes the node, through connection drops (with the retry policy's back-off, no bound on
     * attempts), until it is gone or its session has ended; a client closed meanwhile ends it too.
     */
    private void delete(QueueEntry entry, String path, CompletableFuture<Void> done, int attempt) {
        if (done.isDone() || backend.isClosed()) {
            done.complete(null); // client closed: the session ends with it
            return;
        }
        ZooKeeper zk;
        try {
            zk = backend.zk();
        } catch (LockBackendException e) {
            retry(attempt, () -> delete(entry, path, done, attempt + 1));
            return;
        }
        if (zk.getSessionId() != entry.session()) {
            // Its session ended here; the server removes the node only when it expires the session
            // too, which a server restart postpones: delete it from the new session.
            leftovers.add(entry);
            done.complete(null);
            return;
        }
        if (zk instanceof DirectZooKeeper direct) {
            direct.delete(
                    path, entry.lockName(), entry.token(), (rc, unused) -> deleted(entry, path, done, attempt, rc));
        } else {
            zk.delete(path, -1, (rc, p, ctx) -> deleted(entry, path, done, attempt, rc), null);
        }
    }

    private void deleted(QueueEntry entry, String path, CompletableFuture<Void> done, int attempt, int rc) {
        Code code = Code.get(rc);
        switch (code) {
            case OK, NONODE -> done.complete(null);
                // The handle's session is over, but maybe only here (Curator gives a session up
                // after a session timeout out of reach, while a restarted server still has it).
            case SESSIONEXPIRED -> {
                leftovers.add(entry);
                done.complete(null);
            }
            case CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONMOVED -> retry(
                    attempt, () -> delete(entry, path, done, attempt + 1));
            default -> done.completeExceptionally(failure(entry.lockName(), "deleting " + path, code));
        }
    }

    // ---- recovery

    /**
     * {@inheritDoc}
     *
     * <p>Answers only "found" or "not found", never fails on connection trouble: it keeps looking
     * (with the retry policy's back-off, no bound on attempts) until a read succeeds, or until the
     * session current when it started is over, whose ephemeral nodes the server removes. Curator
     * ends a session that has been out of reach for a session timeout, which bounds the wait. After
     * the client is closed it answers "not found" (the session ends with the client). It fails only
     * on an error that no retry can mend (for example no permission to read the lock's node).
     */
    @Override
    public CompletionStage<Optional<QueueEntry>> findOwnEntry(String lockName, String acquisitionId) {
        CompletableFuture<Optional<QueueEntry>> result = tracked(new CompletableFuture<>(), true, Optional.empty());
        if (!result.isDone()) {
            lookup(lockName, acquisitionId, result, null, 0, Integer.MAX_VALUE);
        }
        return result;
    }

    /**
     * Looks for the acquisition's node among the lock's children. A connection loss while looking
     * is retried once reconnected, never read as "not found": that would make the caller create a
     * second node behind its own orphan, or leave the orphan for good. "Not found" comes only from a
     * successful read, or when the handle {@code origin} (the one current at the first try) has been
     * replaced: the session that could own the node is over.
     *
     * @param origin the handle of the first try, or null before it
     * @param maxAttempt past this attempt, fail with "gave up" (only the enqueue bounds it)
     */
    private void lookup(
            String lockName,
            String acquisitionId,
            CompletableFuture<Optional<QueueEntry>> result,
            @Nullable ZooKeeper origin,
            int attempt,
            int maxAttempt) {
        if (result.isDone()) {
            return;
        }
        if (backend.isClosed()) {
            result.complete(Optional.empty()); // the session ends with the client
            return;
        }
        if (attempt > maxAttempt) {
            result.completeExceptionally(new LockBackendException(
                    lockName,
                    ZooKeeperBackend.NAME,
                    "gave up looking for its own queue node after " + attempt
                            + " attempts: the connection kept failing",
                    null));
            return;
        }
        ZooKeeper zk;
        try {
            zk = backend.zk();
        } catch (LockBackendException e) {
            retry(attempt, () -> lookup(lockName, acquisitionId, result, origin, attempt + 1, maxAttempt));
            return;
        }
        if (origin != null && zk != origin) {
            // Curator replaced the handle: the session that could own the node is over. The server
            // removes its ephemeral nodes when it expires it too; the new session deletes them sooner.
            leftovers.scan(lockName, acquisitionId);
            result.complete(Optional.empty());
            return;
        }
        Runnable retry =
                () -> retry(attempt, () -> lookup(lockName, acquisitionId, result, zk, attempt + 1, maxAttempt));
        String parent = backend.lockPath(lockName);
        zk.getChildren(
                parent,
                false,
                (rc, path, ctx, children, stat) -> {
                    Code code = Code.get(rc);
                    switch (code) {
                        case OK -> {
                            // Read now, after a reply: a fresh handle has no session id before it connects.
                            long session = zk.getSessionId();
                            List<String> mine = children.stream()
                                    .filter(c -> LockNodes.belongsTo(c, acquisitionId))
                                    .toList();
                            checkOwners(zk, lockName, acquisitionId, parent, mine, 0, session, result, retry);
                        }
                            // No parent, or the session is gone with its ephemeral nodes: nothing of ours is left.
                        case NONODE, SESSIONEXPIRED -> result.complete(Optional.empty());
                        case CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONMOVED -> retry.run();
                        default -> result.completeExceptionally(failure(lockName, "reading " + parent, code));
                    }
                },
                null);
    }

    /** Adopts the first candidate whose ephemeral owner is the current session. */
    private void checkOwners(
            ZooKeeper zk,
            String lockName,
            String id,
            String parent,
            List<String> candidates,
            int i,
            long session,
            CompletableFuture<Optional<QueueEntry>> result,
            Runnable retry) {
        if (i >= candidates.size()) {
            result.complete(Optional.empty());
            return;
        }
        String path = parent + "/" + candidates.get(i);
        zk.exists(
                path,
                false,
                (rc, p, ctx, stat) -> {
                    Code code = Code.get(rc);
                    switch (code) {
                        case OK -> {
                            if (stat.getEphemeralOwner() == session) {
                                result.complete(Optional.of(new QueueEntry(
                                        lockName, id, LockNodes.key(candidates.get(i), id), session, stat.getCzxid())));
                                return;
                            }
                            log.debug(
                                    "[lock={} state=QUEUED] not adopting {}: owned by session 0x{}, not 0x{}",
                                    lockName,
                                    path,
                                    Long.toHexString(stat.getEphemeralOwner()),
                                    Long.toHexString(session));
                            // Ours (the name carries the acquisition id) from a session that is over here.
                            if (session != 0) {
                                leftovers.add(lockName, path, stat.getEphemeralOwner());
                            }
                            checkOwners(zk, lockName, id, parent, candidates, i + 1, session, result, retry);
                        }
                        case NONODE -> checkOwners(zk, lockName, id, parent, candidates, i + 1, session, result, retry);
                        case SESSIONEXPIRED -> result.complete(Optional.empty());
                        case CONNECTIONLOSS, OPERATIONTIMEOUT, SESSIONMOVED -> retry.run(); // unknown, not absent
                        default -> result.completeExceptionally(failure(lockName, "reading " + path, code));
                    }
                },
                null);
    }

    // ---- close

    /**
     * Completes every stage still in flight; called by the backend once it is closed. Nothing is
     * retried afterwards (every retry checks {@link ZooKeeperBackend#isClosed()}).
     */
    void closed() {
        for (Runnable onClose : List.copyOf(inFlight.values())) {
            onClose.run();
        }
        waits.clear();
        held.clear();
        leftovers.clear();
    }

    /**
     * Records {@code stage} until it completes, with what completes it if the backend closes first:
     * {@code normally} completes it with {@code value}, else it fails with {@link
     * IllegalStateException}. If the backend is already closed, completes it now.
     */
    private <T> CompletableFuture<T> tracked(CompletableFuture<T> stage, boolean normally, @Nullable T value) {
        inFlight.put(stage, () -> {
            if (normally) {
                stage.complete(value);
            } else {
                stage.completeExceptionally(new IllegalStateException(ZooKeeperBackend.NAME + " client closed"));
            }
        });
        stage.whenComplete((x, e) -> inFlight.remove(stage));
        if (backend.isClosed()) { // after the put: either this sees it, or the close's sweep does
            inFlight.getOrDefault(stage, () -> {}).run();
        }
        return stage;
    }

    // ---- helpers

    /**
     * The handle of the session that owns {@code entry}, or null: after failing {@code result} with
     * {@link EntryLostException} when that session has ended, or after arranging {@code again}
     * when there is no handle just now.
     */
    private @Nullable ZooKeeper sessionOf(
            QueueEntry entry, CompletableFuture<Position> result, int attempt, Runnable again) {
        if (result.isDone() || backend.isClosed()) {
            return null;
        }
        ZooKeeper zk;
        try {
            zk = backend.zk();
        } catch (LockBackendException e) {
            retry(attempt, again);
            return null;
        }
        if (zk.getSessionId() != entry.session()) {
            loseSession(entry, result, "its session ended");
            return null;
        }
        return zk;
    }

    /**
     * Runs {@code again} after connection trouble: at once the first time, later after the retry
     * policy's back-off (a handle whose session has expired fails at once until Curator has replaced
     * it, which would otherwise spin), each time once connected or after the connect timeout,
     * whichever comes first (still disconnected, the operation fails again and comes back here).
     * Does nothing once the client is closed: the close completed what was waiting.
     */
    private void retry(int attempt, Runnable again) {
        if (backend.isClosed()) {
            return;
        }
        Executor later = attempt == 0
                ? Runnable::run
                : CompletableFuture.delayedExecutor(backoffMillis(attempt), TimeUnit.MILLISECONDS);
        later.execute(() -> backend.whenConnected().whenComplete((x, err) -> {
            if (!backend.isClosed()) {
                again.run();
            }
        }));
    }

    private static @Nullable String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null
                && (t instanceof java.util.concurrent.CompletionException
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

    /**
     * An entry's key is not its path (see {@link LockNodes#key}): the parent is the lock's path, which
     * the entry's lock name gives, and the node's name follows from the key and the acquisition id.
     */
    private String path(QueueEntry entry) {
        return backend.nodePath(entry.lockName(), LockNodes.nodeName(entry));
    }

    private static String nodeName(String path) {
        return path.substring(path.lastIndexOf('/') + 1);
    }

    private static LockBackendException failure(String lockName, String what, Code code) {
        String hint = code == Code.NOAUTH ? " (not authorized: the lock was created with other credentials)" : "";
        return new LockBackendException(
                lockName,
                ZooKeeperBackend.NAME,
                what + " failed: " + code + hint,
                org.apache.zookeeper.KeeperException.create(code));
    }
}
