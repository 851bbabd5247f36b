package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.ZooDefs;
import org.junit.jupiter.api.Test;

/** The ensemble itself: one leader, a new one after the leader's kill, data kept, processes stopped. */
class ZooKeeperEnsembleIT {

    private static final Duration WAIT = Timing.scale(Duration.ofSeconds(60));

    @Test
    void killLeader_anotherLeadsAndDataSurvivesItsRestart() throws Exception {
        long[] pids = new long[3];
        try (ZooKeeperEnsemble ensemble = ZooKeeperEnsemble.start()) {
            assertThat(ensemble.size()).isEqualTo(3);
            assertThat(ensemble.uri("/ns")).startsWith("zookeeper://127.0.0.1:").endsWith("/ns");
            assertThat(ensemble.connectString().split(",")).hasSize(3);
            assertThatThrownBy(() -> ensemble.uri(" ")).isInstanceOf(IllegalArgumentException.class);
            for (int i = 0; i < 3; i++) {
                pids[i] = ensemble.member(i).pid();
            }
            ensemble.awaitLeader(WAIT);
            // A leader may be elected while a follower still syncs and answers srvr with no mode.
            ensemble.awaitServing(WAIT);
            int leader = ensemble.leader().orElseThrow();
            long leaders = 0;
            for (int i = 0; i < 3; i++) {
                String mode = ensemble.member(i).mode().orElseThrow();
                leaders += mode.equals("leader") ? 1 : 0;
                assertThat(mode).isIn("leader", "follower");
            }
            assertThat(leaders).isEqualTo(1);
            try (ZkClients client = ZkClients.connect(ensemble.member((leader + 1) % 3), Duration.ofSeconds(10))) {
                client.zk.create("/durable", "x".getBytes(), ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.PERSISTENT);
            }

            ensemble.member(leader).kill();
            assertThat(ensemble.member(leader).isAlive()).isFalse();
            int next = ensemble.awaitLeader(WAIT);
            assertThat(next).isNotEqualTo(leader);
            ensemble.member(leader).restart();
            ensemble.awaitServing(WAIT);
            assertThat(ensemble.member(leader).mode()).hasValue("follower");
            try (ZkClients client = ZkClients.connect(ensemble.member(leader), Duration.ofSeconds(10))) {
                client.zk.sync("/durable", (rc, path, ctx) -> {}, null);
                assertThat(client.zk.getData("/durable", false, null)).isEqualTo("x".getBytes());
            }
        }
        for (long pid : pids) {
            assertThat(ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false))
                    .isFalse();
        }
    }
}
