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
 * <p>Thread-safety: safe from any thread, as the ZooKeeper handle is.
 */
final class ZooKeeperFloorAdapter implements BenchClient {
    private static final String ROOT = "/floor-bench";
    private static final byte[] EMPTY = new byte[0];

    private final ZooKeeper zk;

    ZooKeeperFloorAdapter(String connectString) {
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

    @Override
    public void close() {
        try {
            zk.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
