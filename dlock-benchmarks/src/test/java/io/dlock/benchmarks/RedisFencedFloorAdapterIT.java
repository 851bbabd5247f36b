package io.dlock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.testkit.MutualExclusionChecker;
import io.dlock.testkit.RedisServer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * The fenced floor against a real redis-server: its transaction grants only one holder at a time,
 * even with other threads' commands in flight on the same connection, and its release leaves no key.
 */
class RedisFencedFloorAdapterIT {

    @Test
    void acquire_twoThreadsOneConnection_excludeEachOtherAndLeaveNoKey() throws Exception {
        try (RedisServer server = RedisServer.start();
                RedisFencedFloorAdapter adapter = new RedisFencedFloorAdapter("127.0.0.1:" + server.port())) {
            BenchLock lock = adapter.lock("shared");
            MutualExclusionChecker checker = new MutualExclusionChecker();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                String who = "t" + t;
                Thread thread = new Thread(() -> {
                    try {
                        for (int i = 0; i < 200; i++) {
                            BenchLock.Held held = lock.acquire();
                            checker.enter(who);
                            checker.incrementUnsafely();
                            checker.exit(who);
                            held.release();
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                });
                thread.start();
                threads.add(thread);
            }
            for (Thread thread : threads) {
                thread.join(60_000);
            }
            assertThat(failure.get()).isNull();
            assertThat(checker.counter()).isEqualTo(400);
            assertThat(checker.violations()).isZero();
            assertThat((List<?>) server.command("KEYS", "*")).isEmpty();
            // The connection is left in a usable state: the next grant goes through and is visible.
            BenchLock.Held again = lock.acquire();
            assertThat(server.command("EXISTS", "fenced-floor-bench:shared")).isEqualTo(1L);
            again.release();
        }
    }
}
