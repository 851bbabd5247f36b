package io.dlock.benchmarks;

import java.io.IOException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;

/**
 * The least any ZooKeeper lock does per uncontended cycle, on a raw ZooKeeper handle: create an
 * ephemeral-sequential node (one round trip), delete it (one round trip). It never looks at the
 * other children, so it is not a lock: it runs only in W1 and the server-cost measurement.
 *
 * <p>Two diagnostic variants split the gap between this floor and dlock (run them with {@code
 * --impls}): {@link Mode#ASYNC} makes the same two calls through ZooKeeper's callback API, whose
 * replies reach the caller through the client's event thread (one thread hand-off more per request
 * than the blocking API, where the I/O thread wakes the caller); {@link Mode#PIPELINED} adds
 * dlock's {@code getChildren} sent right behind the {@code create}, so it is dlock's requests
 * without dlock's engine.
 *
 * <p>Thread-safety: safe from any thread, as the ZooKeeper handle is.
 */
final class ZooKeeperFloorAdapter implements BenchClient {
    static final String ROOT = "/floor-bench";
    private static final byte[] EMPTY = new byte[0];

    /** How the calls are made. */
    enum Mode {
        /** Blocking create, blocking delete. */
        SYNC,
        /** The same through the callback API, waiting on a future. */
        ASYNC,
        /** Callback API, create and getChildren pipelined, then delete. */
        PIPELINED,
        /**
         * Callback API, one transaction that creates the node and sets the parent's (empty) data,
         * whose reply carries the parent's stat (its number of children), then delete.
         */
        MULTI
    }

    private final ZooKeeper zk;
    private final Mode mode;

    ZooKeeperFloorAdapter(String connectString) {
        this(connectString, Mode.SYNC);
    }

    ZooKeeperFloorAdapter(String connectString, Mode mode) {
        this.mode = mode;
        CountDownLatch connected = new CountDownLatch(1);
        try {
            zk = new ZooKeeper(connectString, 10_000, event -> {
                if (event.getState() == Watcher.Event.KeeperState.SyncConnected) {
                    connected.countDown();
                }
            });
            if (!connected.await(10, TimeUnit.SECONDS)) {
                zk.close();
                throw new IllegalStateException("ZooKeeper at " + connectString + " did not connect in 10 s");
            }
            createIfMissing(ROOT);
        } catch (IOException e) {
            throw new IllegalStateException("cannot open a ZooKeeper handle to " + connectString, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while connecting to ZooKeeper", e);
        }
    }

    private void createIfMissing(String path) throws InterruptedException {
        try {
            zk.create(path, EMPTY, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
        } catch (KeeperException.NodeExistsException e) {
            // another handle made it first
        } catch (KeeperException e) {
            throw new IllegalStateException("cannot create " + path, e);
        }
    }

    @Override
    public BenchLock lock(String name) {
        String parent = ROOT + "/" + name;
        try {
            createIfMissing(parent); // persistent: the floor does not pay for container re-creation
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
        String prefix = parent + "/lock-";
        if (mode != Mode.SYNC) {
            return asyncLock(parent, prefix);
        }
        return () -> {
            String path;
            try {
                path = zk.create(prefix, EMPTY, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL_SEQUENTIAL);
            } catch (KeeperException e) {
                throw new IllegalStateException("create under " + parent + " failed", e);
            }
            return () -> {
                try {
                    zk.delete(path, -1);
                } catch (KeeperException e) {
                    throw new IllegalStateException("delete of " + path + " failed", e);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted deleting " + path, e);
                }
            };
        };
    }

    private BenchLock asyncLock(String parent, String prefix) {
        return () -> {
            java.util.concurrent.CompletableFuture<String> created = new java.util.concurrent.CompletableFuture<>();
            zk.create(
                    prefix,
                    EMPTY,
                    ZooDefs.Ids.OPEN_ACL_UNSAFE,
                    CreateMode.EPHEMERAL_SEQUENTIAL,
                    (rc, path, ctx, name) -> {
                        if (rc != 0) {
                            created.completeExceptionally(KeeperException.create(KeeperException.Code.get(rc), path));
                        } else {
                            created.complete(name);
                        }
                    },
                    null);
            String path;
            if (mode == Mode.MULTI) {
                java.util.concurrent.CompletableFuture<String> made = new java.util.concurrent.CompletableFuture<>();
                zk.multi(
                        java.util.List.of(
                                org.apache.zookeeper.Op.create(
                                        prefix, EMPTY, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL_SEQUENTIAL),
                                org.apache.zookeeper.Op.setData(parent, EMPTY, -1)),
                        (rc, p, ctx, results) -> {
                            if (rc != 0) {
                                made.completeExceptionally(KeeperException.create(KeeperException.Code.get(rc), p));
                            } else {
                                made.complete(((org.apache.zookeeper.OpResult.CreateResult) results.get(0)).getPath());
                            }
                        },
                        null);
                path = join(made);
                return () -> {
                    java.util.concurrent.CompletableFuture<Void> deleted =
                            new java.util.concurrent.CompletableFuture<>();
                    zk.delete(path, -1, (rc, p, ctx) -> deleted.complete(null), null);
                    join(deleted);
                };
            }
            if (mode == Mode.PIPELINED) {
                java.util.concurrent.CompletableFuture<String> listed = new java.util.concurrent.CompletableFuture<>();
                // Answered after the create (one session's requests are answered in order): wait for it.
                zk.getChildren(parent, false, (rc, p, ctx, children, stat) -> listed.complete(p), null);
                join(listed);
                path = join(created);
            } else {
                path = join(created);
            }
            return () -> {
                java.util.concurrent.CompletableFuture<Void> deleted = new java.util.concurrent.CompletableFuture<>();
                zk.delete(path, -1, (rc, p, ctx) -> deleted.complete(null), null);
                join(deleted);
            };
        };
    }

    private static <T> T join(java.util.concurrent.CompletableFuture<T> f) {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
    }

    @Override
    public void close() {
        try {
            zk.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
