package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.time.Duration;
import java.util.Optional;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.ZooDefs;
import org.junit.jupiter.api.Test;

class ZooKeeperProcessIT {

    private static final Duration SESSION = Duration.ofSeconds(10);
    private static final Duration WAIT = Timing.scale(Duration.ofSeconds(15));

    @Test
    void kill_thenRestart_persistentNodeSurvivesOnSamePort() throws Exception {
        long firstPid;
        try (ZooKeeperProcess server = ZooKeeperProcess.start()) {
            firstPid = server.pid();
            assertThat(ProcessHandle.of(firstPid))
                    .hasValueSatisfying(p -> assertThat(p.isAlive()).isTrue());
            assertThat(firstPid).isNotEqualTo(ProcessHandle.current().pid());
            try (ZkClients client = ZkClients.connect(server, SESSION)) {
                client.zk.create("/durable", "x".getBytes(), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            }

            server.kill();

            assertThat(server.isAlive()).isFalse();
            assertThat(isRunning(firstPid)).isFalse();
            assertThat(connects(server.port()))
                    .as("port still accepts after kill")
                    .isFalse();

            server.restart();

            assertThat(server.pid()).isNotEqualTo(firstPid);
            try (ZkClients client = ZkClients.connect(server, SESSION)) {
                assertThat(client.zk.getData("/durable", false, null)).isEqualTo("x".getBytes());
            }
        }
    }

    @Test
    void pause_serverStopsAnswering_resumeAnswersAgain() {
        ZooKeeperProcess server = ZooKeeperProcess.start();
        long pid = server.pid();
        try {
            assertThat(FourLetterWords.ask(server.port(), "ruok", Duration.ofSeconds(1)))
                    .hasValue("imok");

            server.pause();
            assertThat(FourLetterWords.ask(server.port(), "ruok", Duration.ofSeconds(1)))
                    .isEmpty();
            assertThat(server.isAlive()).isTrue();

            server.resume();
            await().atMost(WAIT).until(() -> FourLetterWords.isOk(server.port(), Duration.ofSeconds(1)));
        } finally {
            server.close();
        }
        assertThat(isRunning(pid)).isFalse();
        assertThat(server.dataDir()).doesNotExist();
    }

    @Test
    void close_pausedServer_leavesNoProcess() {
        ZooKeeperProcess server = ZooKeeperProcess.start();
        long pid = server.pid();
        server.pause();
        server.close();
        server.close();
        assertThat(isRunning(pid)).isFalse();
        assertThat(server.uri("ns")).isEqualTo("zookeeper://127.0.0.1:" + server.port() + "/ns");
    }

    private static boolean isRunning(long pid) {
        Optional<ProcessHandle> handle = ProcessHandle.of(pid);
        return handle.isPresent() && handle.get().isAlive();
    }

    private static boolean connects(int port) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", port), 1000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }
}
