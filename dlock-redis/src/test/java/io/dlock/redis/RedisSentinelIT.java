package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.RedisServer;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** A master found through a Sentinel: {@code redis-sentinel://host:port?master=name}. */
class RedisSentinelIT {

    @Test
    void connect_throughSentinel_locksOnTheMaster() throws Exception {
        try (RedisServer master = RedisServer.start();
                RedisServer sentinel = RedisServer.builder()
                        .sentinel()
                        .config("sentinel monitor mymaster 127.0.0.1 " + master.port() + " 1")
                        .config("sentinel down-after-milliseconds mymaster 2000")
                        .start()) {
            RedisTestSupport.markContinuous(master, "s");
            String uri = "redis-sentinel://" + sentinel.connectString() + "?master=mymaster&keyPrefix=s";
            try (LockClient a = LockClient.connect(uri);
                    LockClient b = LockClient.connect(uri)) {
                try (Lease lease = a.lock("via-sentinel").acquire()) {
                    assertThat(b.lock("via-sentinel").tryAcquire(Duration.ZERO)).isEmpty();
                    // The entry lives on the master the Sentinel named.
                    assertThat(RedisTestSupport.queue(master, "s:{via-sentinel}:x"))
                            .hasSize(1);
                    assertThat(lease.isValid()).isTrue();
                }
                assertThat(b.lock("via-sentinel").tryAcquire(Duration.ZERO)).isPresent();
            }
            assertThat(RedisTestSupport.lockKeys(master, "s:*")).isEmpty();
        }
    }
}
