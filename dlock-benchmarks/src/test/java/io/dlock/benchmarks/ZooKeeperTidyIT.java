package io.dlock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.LockOptions;
import io.dlock.testkit.ZooKeeperProcess;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.Test;

/**
 * The runner's tidying between workloads against a real ZooKeeper: the parents that dlock and
 * Curator left empty go, a parent whose lock is held stays and its holder keeps the lock.
 */
class ZooKeeperTidyIT {

    @Test
    void deleteEmpty_removesEmptyParentsOfEachImplementation_leavesAHeldOneAndIgnoresMissingOnes() throws Exception {
        try (ZooKeeperProcess server = ZooKeeperProcess.start();
                DlockAdapter dlock = DlockAdapter.zookeeper("127.0.0.1:" + server.port(), LockOptions.defaults());
                CuratorAdapter curator = new CuratorAdapter("127.0.0.1:" + server.port())) {
            dlock.lock("warm").acquire().release(); // makes the roots
            curator.lock("warm").acquire().release();
            BenchLock.Held held = dlock.lock("held").acquire();
            // Empty parents as persistent nodes: the testkit's server removes empty containers
            // within a second, which would make the count a race.
            ZooKeeper setup = connect(server);
            try {
                for (String path : List.of("/dlock-bench/empty", "/curator-bench/empty")) {
                    setup.create(path, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
                }
            } finally {
                setup.close();
            }
            List<String> paths = ZooKeeperTidy.parents(
                    List.of(LockImpl.DLOCK_ZK, LockImpl.CURATOR), List.of("empty", "held", "never"));

            ZooKeeperTidy.Outcome outcome = ZooKeeperTidy.deleteEmpty("127.0.0.1:" + server.port(), paths);

            assertThat(outcome.deleted()).isEqualTo(2);
            assertThat(outcome.failed()).isZero();
            ZooKeeper zk = connect(server);
            try {
                assertThat(zk.exists("/dlock-bench/empty", false)).isNull();
                assertThat(zk.exists("/curator-bench/empty", false)).isNull();
                assertThat(zk.getChildren("/dlock-bench/held", false)).hasSize(1);
            } finally {
                zk.close();
            }
            held.release();
            // The lock works again on a tidied name: its parent is made anew.
            curator.lock("empty").acquire().release();
            dlock.lock("empty").acquire().release();
        }
    }

    @Test
    void parents_underEachZooKeeperImplementationsOwnRoot_onceEach_noneForOtherBackends() {
        assertThat(ZooKeeperTidy.parents(
                        List.of(
                                LockImpl.DLOCK_ZK,
                                LockImpl.DLOCK_ZK_NO_LOCAL_QUEUE,
                                LockImpl.CURATOR,
                                LockImpl.ZK_FLOOR,
                                LockImpl.DLOCK_REDIS),
                        List.of("a", "b")))
                .containsExactly(
                        "/dlock-bench/a",
                        "/dlock-bench/b",
                        "/curator-bench/a",
                        "/curator-bench/b",
                        "/floor-bench/a",
                        "/floor-bench/b");
    }

    private static ZooKeeper connect(ZooKeeperProcess server) throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper("127.0.0.1:" + server.port(), 10_000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        assertThat(connected.await(10, TimeUnit.SECONDS)).isTrue();
        return zk;
    }
}
