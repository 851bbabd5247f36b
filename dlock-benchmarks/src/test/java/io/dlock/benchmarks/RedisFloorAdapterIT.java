package io.dlock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.testkit.MutualExclusionChecker;
import io.dlock.testkit.RedisServer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Both Redis floors against a real redis-server: one holder at a time, even with other threads'
 * commands in flight on the same connection (the fenced floor's transaction must stay whole), and
 * no key left after the releases.
 */
class RedisFloorAdapterIT {

    @ParameterizedTest
    @EnumSource(RedisFloorAdapter.Mode.class)
    void acquire_twoThreadsOneConnection_excludeEachOtherAndLeaveNoKey(RedisFloorAdapter.Mode mode) throws Exception {
        try (RedisServer server = RedisServer.start();
                RedisFloorAdapter adapter = new RedisFloorAdapter("127.0.0.1:" + server.port(), mode)) {
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
            assertThat((List<?>) server.command("KEYS", "*"))
                    .singleElement()
                    .asString()
                    .endsWith(":shared");
            again.release();
        }
    }
}
