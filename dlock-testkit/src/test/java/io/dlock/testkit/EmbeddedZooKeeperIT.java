package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class EmbeddedZooKeeperIT {

    private static final Duration SESSION = Duration.ofSeconds(10);
    private static final Duration WAIT = Timing.scale(Duration.ofSeconds(15));

    private EmbeddedZooKeeper server;

    @BeforeEach
    void start() {
        server = EmbeddedZooKeeper.start();
    }

    @AfterEach
    void close() {
        server.close();
    }

    @Test
    void children_nodeCreatedByClient_visibleInTree() throws Exception {
        int baseline = server.nodeCount();
        long zxidBefore = server.lastProcessedZxid();
        try (ZkClients client = ZkClients.connect(server, SESSION)) {
            client.zk.create("/locks", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            client.zk.create("/locks/b", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            client.zk.create("/locks/a", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
        }
        assertThat(server.children("/")).contains("locks", "zookeeper");
        assertThat(server.children("/locks")).containsExactly("b"); // the ephemeral left with its session
        assertThat(server.children("/missing")).isEmpty();
        assertThat(server.nodeCount()).isEqualTo(baseline + 2);
        assertThat(server.lastProcessedZxid()).isGreaterThan(zxidBefore);
        assertThat(server.uri("/locks")).isEqualTo("zookeeper://127.0.0.1:" + server.port() + "/locks");
        assertThat(server.connectString()).isEqualTo("127.0.0.1:" + server.port());
    }

    @Test
    void watchCount_existsWatchThenDelete_goesZeroOneZero() throws Exception {
        try (ZkClients client = ZkClients.connect(server, SESSION)) {
            client.zk.create("/w", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            assertThat(server.watchCount()).isZero();

            AtomicReference<WatchedEvent> fired = new AtomicReference<>();
            assertThat(client.zk.exists("/w", fired::set)).isNotNull();
            assertThat(server.watchCount()).isEqualTo(1);

            client.zk.delete("/w", -1);
            await().atMost(WAIT).until(() -> fired.get() != null);
            assertThat(fired.get().getType()).isEqualTo(Watcher.Event.EventType.NodeDeleted);
            assertThat(server.watchCount()).isZero();
        }
    }

    @Test
    void restart_persistentData_survives() throws Exception {
        try (ZkClients client = ZkClients.connect(server, SESSION)) {
            client.zk.create("/kept", "v".getBytes(), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            int port = server.port();

            server.restart();

            assertThat(server.port()).isEqualTo(port);
            assertThat(server.children("/")).contains("kept");
            await().atMost(WAIT).until(() -> client.zk.getState().isConnected());
            assertThat(client.zk.getData("/kept", false, null)).isEqualTo("v".getBytes());
        }
    }

    @Test
    void stop_inspection_throwsUntilRestarted() {
        server.stop();
        assertThatThrownBy(server::nodeCount)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("not serving");
        server.restart();
        assertThat(server.children("/")).contains("zookeeper");
    }

    @Test
    void expireSession_connectedClient_seesExpiredAndLosesEphemerals() throws Exception {
        try (ZkClients client = ZkClients.connect(server, SESSION)) {
            client.zk.create("/eph", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
            long session = client.zk.getSessionId();

            server.expireSession(session);

            assertThat(server.children("/")).doesNotContain("eph");
            await().atMost(WAIT).until(() -> client.states.contains(Watcher.Event.KeeperState.Expired));
            assertThatThrownBy(() -> server.expireSession(session))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(Long.toHexString(session));
        }
    }

    @Test
    void close_twice_freesPortAndDeletesDataDir() throws Exception {
        int port = server.port();
        Path dataDir = server.dataDir();
        assertThat(dataDir).exists();

        server.close();
        server.close();

        assertThat(dataDir).doesNotExist();
        try (ServerSocket socket = new ServerSocket()) {
            socket.bind(new InetSocketAddress("127.0.0.1", port));
            assertThat(socket.getLocalPort()).isEqualTo(port);
        }
        assertThatThrownBy(server::restart)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void start_givenPortAndDir_reloadsDataOfEarlierServer() throws Exception {
        Path dir = Files.createTempDirectory("dlock-zk-it-");
        int port = FreePorts.loopback();
        try (EmbeddedZooKeeper first = EmbeddedZooKeeper.start(port, dir)) {
            try (ZkClients client = ZkClients.connect(first, SESSION)) {
                client.zk.create("/again", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            }
        }
        assertThat(dir).isDirectory(); // the caller owns it
        try (EmbeddedZooKeeper second = EmbeddedZooKeeper.start(port, dir)) {
            assertThat(second.children("/")).contains("again");
        }
        Reaper.deleteTempDirectory(dir);
    }
}
