package io.dlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.EmbeddedZooKeeper;
import io.dlock.testkit.EtcdServer;
import io.dlock.testkit.RedisServer;
import io.netty.util.Version;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * One application with every backend on its class path (ZooKeeper's Netty, Lettuce's Netty and
 * jetcd's gRPC on Netty): one Netty version is loaded, and a client of each backend connects and
 * locks at the same time.
 */
class AllBackendsIT {

    @Test
    void everyBackendOnOneClassPath_connectsAndLocks_onOneNetty() throws Exception {
        Map<String, Version> netty = Version.identify();
        Set<String> versions =
                netty.values().stream().map(Version::artifactVersion).collect(Collectors.toSet());
        assertThat(versions).as("Netty artifacts on the class path: %s", netty).hasSize(1);
        assertThat(netty).containsKeys("netty-codec-http2", "netty-handler", "netty-transport");

        try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.start();
                RedisServer redis = RedisServer.start();
                EtcdServer etcd = EtcdServer.start();
                LockClient zkClient = LockClient.connect(zk.uri("all"));
                LockClient redisClient = LockClient.connect(redis.uri("all"));
                LockClient etcdClient = LockClient.connect(etcd.uri("all"))) {
            // A fresh redis-server: nothing was granted under the prefix, so skip dlock-redis's
            // data-loss fence (a lease time) by marking its epoch continuous.
            redis.markFreshPrefix("all");
            etcd.markFreshNamespace("all");
            for (LockClient client : List.of(zkClient, redisClient, etcdClient)) {
                try (Lease lease = client.lock("shared-name")
                        .tryAcquire(Duration.ofSeconds(10))
                        .orElseThrow()) {
                    assertThat(lease.fencingToken()).isPositive();
                    assertThat(lease.isValid()).isTrue();
                }
            }
            // All three held at once, each on its own server.
            try (Lease a = zkClient.lock("all3").acquire();
                    Lease b = redisClient.lock("all3").acquire();
                    Lease c = etcdClient.lock("all3").acquire()) {
                assertThat(List.of(a, b, c)).allMatch(Lease::isValid);
            }
        }
    }
}
