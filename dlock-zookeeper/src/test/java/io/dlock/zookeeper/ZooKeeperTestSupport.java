package io.dlock.zookeeper;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.EmbeddedZooKeeper;
import io.dlock.testkit.LockFixtureSupport;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/** One embedded ZooKeeper per test class; a fresh namespace and fresh clients per test. */
@DlockServer(DlockServer.Kind.ZOOKEEPER)
abstract class ZooKeeperTestSupport extends LockFixtureSupport {
    static EmbeddedZooKeeper server;

    String namespace;

    @BeforeAll
    static void server(EmbeddedZooKeeper started) {
        server = started;
    }

    @BeforeEach
    void newNamespace(TestInfo info) {
        namespace = "t-" + info.getTestMethod().orElseThrow().getName();
    }

    /** Whether this test stopped the server's removal of empty parents ({@link #pauseContainerReaping}). */
    private boolean reapingPaused;

    /** Stops the server's removal of empty parents until this test ends. */
    void pauseContainerReaping() {
        server.reapContainers(false);
        reapingPaused = true;
    }

    @AfterEach
    void closeClients() throws Exception {
        closeTracked();
        if (reapingPaused) {
            reapingPaused = false;
            server.reapContainers(true);
        }
    }

    @Override
    public String backendName() {
        return "zookeeper";
    }

    @Override
    public List<String> entries(String lock) {
        return children(lock);
    }

    @Override
    public String patient() {
        return "sessionTimeout=10s";
    }

    @Override
    public String shortLease() {
        return "sessionTimeout=2s";
    }

    @Override
    public Duration crashReleaseBound() {
        // Session timeout (2 s) plus the server's expiry tick and a margin.
        return Duration.ofSeconds(6);
    }

    @Override
    public String uri(String query) {
        return server.uri(namespace) + (query.isEmpty() ? "" : "?" + query);
    }

    /** The children of a lock's parent znode, as the server sees them. */
    List<String> children(String lock) {
        return server.children("/" + namespace + "/" + lock);
    }

    /** A plain ZooKeeper client, for reading node metadata the API does not expose. */
    ZooKeeper rawClient() throws Exception {
        CountDownLatch connected = new CountDownLatch(1);
        ZooKeeper zk = new ZooKeeper(server.connectString(), 10_000, e -> {
            if (e.getState() == org.apache.zookeeper.Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        connected.await(10, TimeUnit.SECONDS);
        track(zk::close);
        return zk;
    }
}
