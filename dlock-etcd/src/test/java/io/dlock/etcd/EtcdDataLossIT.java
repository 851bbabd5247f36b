package io.dlock.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.EtcdServer;
import io.dlock.testkit.Timing;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * etcd restarted without its data (a lost volume, a rebuilt single member): its revisions, and so
 * the fencing tokens made from them, start again low, and the old holder's lease is gone on the
 * server while its client may still count it valid for up to a lease time. Nobody may be granted
 * the lock in that time, and the next token must be higher than the old holder's.
 */
class EtcdDataLossIT {

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }

    @Test
    void restartWithoutData_noGrantWhileTheOldLeaseMayBeValid_andTheNextTokenIsHigher() throws Exception {
        try (EtcdServer server = EtcdServer.start()) {
            String uri = server.uri("loss") + "?leaseTime=3s";
            try (LockClient a = LockClient.connect(uri)) {
                Lease held = a.lock("x")
                        .tryAcquire(Timing.scale(Duration.ofSeconds(20)))
                        .orElseThrow();
                long token = held.fencingToken();
                AtomicLong lostAt = new AtomicLong();
                held.onLost(e -> lostAt.compareAndSet(0, System.nanoTime()));

                server.kill();
                deleteTree(server.dir().resolve("data"));
                server.restart();

                try (LockClient b = LockClient.connect(uri)) {
                    long asked = System.nanoTime();
                    Optional<Lease> granted = b.lock("x").tryAcquire(Timing.scale(Duration.ofSeconds(20)));
                    long grantedAt = System.nanoTime();
                    assertThat(granted).as("B granted once the fence is over").isPresent();
                    assertThat(lostAt.get())
                            .as(
                                    "A lost its lease before B was granted (B granted after %d ms)",
                                    (grantedAt - asked) / 1_000_000)
                            .isNotZero();
                    assertThat(lostAt.get() - grantedAt)
                            .as("A lost before B's grant")
                            .isNegative();
                    assertThat(held.isValid()).isFalse();
                    assertThat(granted.orElseThrow().fencingToken())
                            .as("B's token after A's %d", token)
                            .isGreaterThan(token);
                    granted.orElseThrow().close();
                }
            }
        }
    }
}
