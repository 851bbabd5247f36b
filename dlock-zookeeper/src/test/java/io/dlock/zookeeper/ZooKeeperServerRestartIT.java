package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.Timing;
import io.dlock.testkit.ZooKeeperProcess;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** ZooKeeper killed with SIGKILL and restarted on the same data while a lock is held. */
class ZooKeeperServerRestartIT {

    @Test
    void serverKilledAndRestarted_leaseSurvivesAndTokensKeepIncreasing() throws Exception {
        try (ZooKeeperProcess server = ZooKeeperProcess.start()) {
            // 30 s sessions: the lease may stay suspended for 10 s, ample for a JVM restart.
            String uri = server.uri("restart") + "?sessionTimeout=30s&connectTimeout=20s";
            try (LockClient holder = LockClient.connect(uri);
                    LockClient other = LockClient.connect(uri)) {
                Lease lease = holder.lock("survivor").acquire();
                AtomicInteger lost = new AtomicInteger();
                lease.onLost(e -> lost.incrementAndGet());

                server.restart(); // SIGKILL, then a new server process on the same port and data

                // The session was restored from the data directory: the lock is still held.
                assertThat(other.lock("survivor").tryAcquire(Duration.ofSeconds(1)))
                        .isEmpty();
                assertThat(lease.isValid()).isTrue();
                assertThat(lost).hasValue(0);
                lease.close();
                try (Lease next = other.lock("survivor")
                        .tryAcquire(Timing.scale(Duration.ofSeconds(20)))
                        .orElseThrow()) {
                    // zxids carry on after the restart: the fenced resource keeps accepting.
                    assertThat(next.fencingToken()).isGreaterThan(lease.fencingToken());
                }
            }
        }
    }

    @Test
    void serverDownLongerThanSafeWindow_leaseLostThenLockUsableAgain() throws Exception {
        try (ZooKeeperProcess server = ZooKeeperProcess.start()) {
            String uri = server.uri("outage") + "?sessionTimeout=3s&connectTimeout=20s";
            try (LockClient holder = LockClient.connect(uri)) {
                Lease lease = holder.lock("outage").acquire();
                AtomicInteger lost = new AtomicInteger();
                lease.onLost(e -> lost.incrementAndGet());
                server.pause(); // the server stops answering; the client notices after 2 s
                org.awaitility.Awaitility.await()
                        .atMost(Timing.scale(Duration.ofSeconds(15)))
                        .until(() -> !lease.isValid());
                server.resume();
                org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> lost.get() == 1);
                try (Lease again = holder.lock("outage")
                        .tryAcquire(Timing.scale(Duration.ofSeconds(20)))
                        .orElseThrow()) {
                    assertThat(again.fencingToken()).isGreaterThan(lease.fencingToken());
                }
                assertThat(lost).hasValue(1);
            }
        }
    }
}
