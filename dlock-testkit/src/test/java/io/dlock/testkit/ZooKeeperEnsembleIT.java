package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.ZooDefs;
import org.junit.jupiter.api.Test;

/** The ensemble itself: one leader, a new one after the leader's kill, data kept, processes stopped. */
class ZooKeeperEnsembleIT {

    private static final Duration WAIT = Timing.scale(Duration.ofSeconds(60));

    @Test
    void killLeader_anotherLeadsAndDataSurvivesItsRestart() throws Exception {
        long[] pids = new long[3];
        // ZooKeeper's log at info (the testkit's default is warn), to find the election in log().
        try (ZooKeeperEnsemble ensemble =
                ZooKeeperEnsemble.start(3, List.of("-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper=info"))) {
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

            for (int i = 0; i < 3; i++) {
                assertThat(ensemble.member(i).servingSince().orElseThrow() - System.nanoTime())
                        .isNegative();
            }

            long killed = System.nanoTime();
            ensemble.member(leader).kill();
            assertThat(ensemble.member(leader).isAlive()).isFalse();
            int next = ensemble.awaitLeader(WAIT);
            assertThat(next).isNotEqualTo(leader);
            // The new leader took over after the kill (restarting every session's timeout), and
            // the other survivor began to follow it after the kill as well.
            ensemble.awaitServing(WAIT);
            long since = ensemble.member(next).servingSince().orElseThrow();
            assertThat(since - killed).isPositive();
            assertThat(since - System.nanoTime()).isNegative();
            int other = 3 - leader - next;
            assertThat(ensemble.member(other).servingSince().orElseThrow() - killed)
                    .isPositive();
            assertThat(ensemble.latestServingSince().orElseThrow() - killed).isPositive();
            ensemble.member(leader).restart();
            ensemble.awaitServing(WAIT);
            assertThat(ensemble.member(leader).mode()).hasValue("follower");
            // The log keeps the killed process's lines (it led) besides the new one's (it follows).
            List<String> log = ensemble.member(leader).log();
            assertThat(log).anyMatch(l -> l.contains("LEADING - LEADER ELECTION TOOK"));
            assertThat(log).anyMatch(l -> l.contains("FOLLOWING - LEADER ELECTION TOOK"));
            assertThat(log.indexOf(log.stream()
                            .filter(l -> l.contains("LEADING - LEADER ELECTION TOOK"))
                            .findFirst()
                            .orElseThrow()))
                    .isLessThan(log.indexOf(log.stream()
                            .filter(l -> l.contains("FOLLOWING - LEADER ELECTION TOOK"))
                            .reduce((a, b) -> b)
                            .orElseThrow()));
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

    /**
     * What a kill's bound in the ensemble torture relies on: a client that dies while a follower is
     * away is expired no sooner than a session timeout after its death (ZooKeeper never expires
     * early) and no later than a timeout after the later of its death and the follower's start
     * ({@link ZooKeeperEnsemble.Member#servingSince()}), whether or not the joining follower renewed
     * the session (docs/safety.md: a follower that replays a session's creation may report it as
     * touched; this restarted follower was not seen to).
     */
    @Test
    void followerJoiningAfterAClientDied_deadSessionGoesWithinATimeoutOfTheLaterOfTheTwo() throws Exception {
        Duration timeout = Duration.ofSeconds(10);
        long tick = Duration.ofMillis(ZooKeeperEnsemble.TICK_TIME_MS).toNanos();
        try (ZooKeeperEnsemble ensemble = ZooKeeperEnsemble.start()) {
            ensemble.awaitServing(WAIT);
            int leader = ensemble.leader().orElseThrow();
            ZooKeeperEnsemble.Member away = ensemble.member((leader + 1) % 3);
            away.kill();
            FaultProxy proxy = FaultProxy.start(ensemble.member(leader).port());
            ZkClients doomed = ZkClients.connect(proxy.connectString(), timeout);
            try {
                doomed.zk.create("/doomed", new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL);
                long died = System.nanoTime();
                proxy.close(); // for the servers the client is dead: its socket closes, no more pings
                Thread.sleep(2_000); // away for seconds, so that the later of the two is the join

                away.restart(); // until it serves again: it synced with the leader
                long joined = away.servingSince().orElseThrow();
                assertThat(joined - died)
                        .as("the follower joined while the dead session still lived")
                        .isPositive()
                        .isLessThan(timeout.toNanos());
                try (ZkClients observer = ZkClients.connect(ensemble.member(leader), timeout)) {
                    await().atMost(Timing.scale(Duration.ofSeconds(60)))
                            .pollInterval(Duration.ofMillis(20))
                            .until(() -> observer.zk.exists("/doomed", false) == null);
                    long gone = System.nanoTime();
                    assertThat(gone - died)
                            .as("never before a timeout")
                            .isGreaterThanOrEqualTo(timeout.toNanos() - tick);
                    // Expiry runs in ticks (up to one late), `joined` is read from the server's uptime
                    // (whole milliseconds, a tick early at most), and the observer polls.
                    assertThat(gone - Math.max(died, joined))
                            .as("within a timeout of the later of the death and the join")
                            .isLessThanOrEqualTo(timeout.toNanos() + 3 * tick);
                }
            } finally {
                proxy.close();
                doomed.zk.close(1_000);
            }
        }
    }
}
