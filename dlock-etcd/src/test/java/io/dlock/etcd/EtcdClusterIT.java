package io.dlock.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.testkit.Contention;
import io.dlock.testkit.EtcdCluster;
import io.dlock.testkit.EtcdServer;
import io.dlock.testkit.Timing;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.GetOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * A 3-member etcd cluster on loopback whose leader is killed (-9) while locks are held and
 * contended: the counter stays exact, tokens keep rising (the fenced store rejects none), and
 * leases survive an election shorter than their TTL.
 */
class EtcdClusterIT {
    static EtcdCluster cluster;

    @BeforeAll
    static void start() {
        cluster = EtcdCluster.start(3);
    }

    @AfterAll
    static void stop() {
        cluster.close();
    }

    /** The member that is leader now, asked of every live member until one answers. */
    static EtcdServer leader() throws Exception {
        try (Client c = Client.builder()
                .endpoints(cluster.members().stream()
                        .filter(EtcdServer::isAlive)
                        .map(m -> "http://" + m.connectString())
                        .toArray(String[]::new))
                .build()) {
            for (EtcdServer m : cluster.members()) {
                if (!m.isAlive()) {
                    continue;
                }
                var status = c.getMaintenanceClient()
                        .statusMember("http://" + m.connectString())
                        .get(5, TimeUnit.SECONDS);
                if (status.getLeader() == status.getHeader().getMemberId()) {
                    return m;
                }
            }
        }
        throw new IllegalStateException("no leader in " + cluster);
    }

    @Test
    void leaderKilled_whileHeldAndContended_counterExactTokensRiseLeasesSurvive() throws Exception {
        String ns = "t-leader";
        String opts = "?leaseTime=10s&connectTimeout=5s&localQueueing=false"; // every hand-off through etcd
        try (Client c = Client.builder()
                .endpoints("http://" + cluster.members().get(0).connectString())
                .build()) {
            EtcdTestSupport.markEpoch(c, ns);
        }
        List<LockClient> clients = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                clients.add(LockClient.connect(cluster.uri(ns) + opts));
            }
            Lease held = clients.get(0).lock("held").acquire();
            List<LockLostException> lost = new CopyOnWriteArrayList<>();
            held.onLost(lost::add);
            EtcdServer leader = leader();
            CompletableFuture<Contention.Result> run = CompletableFuture.supplyAsync(() -> {
                try {
                    return Contention.run(
                            new LockClient[] {clients.get(1), clients.get(2)},
                            "counter",
                            4,
                            200,
                            Duration.ofMinutes(3));
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            Thread.sleep(500); // let the contention get going before the kill (not a wait for a condition)
            assertThat(run).as("still contending when the leader dies").isNotDone();
            leader.kill();
            Contention.Result r = run.get(4, TimeUnit.MINUTES);
            assertThat(r.checker().counter()).isEqualTo(800);
            assertThat(r.checker().violations()).isZero();
            assertThat(r.store().rejectedWrites()).isZero();
            assertThat(r.store().acceptedWrites()).isEqualTo(800);
            // The election took less than the 10 s TTL: the held lease survived it.
            assertThat(held.isValid()).isTrue();
            assertThat(lost).isEmpty();
            assertThat(leader()).isNotSameAs(leader);
            try (Lease after = clients.get(1).lock("held2").acquire()) {
                assertThat(after.fencingToken()).isGreaterThan(held.fencingToken());
            }
            held.close();
            cluster.restart(leader);
        } finally {
            for (LockClient c : clients) {
                c.close();
            }
        }
        cluster.awaitHealthy(Timing.scale(Duration.ofSeconds(30)));
        try (Client c = Client.builder()
                .endpoints(
                        "http://" + cluster.members().get(0).connectString(),
                        "http://" + cluster.members().get(1).connectString(),
                        "http://" + cluster.members().get(2).connectString())
                .build()) {
            // Nothing left but the epoch marker, which stays by design.
            await().atMost(Duration.ofSeconds(10)).until(() -> c
                    .getKVClient()
                    .get(
                            ByteSequence.from(ns + "/", StandardCharsets.UTF_8),
                            GetOption.builder()
                                    .isPrefix(true)
                                    .withKeysOnly(true)
                                    .build())
                    .get(5, TimeUnit.SECONDS)
                    .getKvs()
                    .stream()
                    .allMatch(kv -> EtcdTestSupport.isEpochMarker(kv.getKey().toString(StandardCharsets.UTF_8))));
        }
    }
}
