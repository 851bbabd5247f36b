package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Capability;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.Contention;
import io.dlock.testkit.ExclusiveLockContract;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * The exclusive lock on a standalone Redis, through the public API: the testkit's contract, plus
 * what is Redis's own (wake-ups counted as {@code PUBLISH}es, the unfair mode, the capabilities).
 */
class RedisLockIT extends RedisTestSupport implements ExclusiveLockContract {

    @Test
    void release_thirtyWaiters_wakesOneWaiterPerRelease() throws Exception {
        LockClient a = client("localQueueing=false");
        LockClient b = client("localQueueing=false");
        Lease held = a.lock("herd").acquire();
        int waiters = 30;
        List<CompletableFuture<Lease>> pending = new ArrayList<>();
        for (int i = 0; i < waiters; i++) {
            pending.add((i % 2 == 0 ? a : b).lock("herd").acquireAsync(Duration.ofMinutes(1)));
        }
        await().atMost(scaled(10)).until(() -> entries("herd").size() == waiters + 1);
        long publishesBefore = publishCount();
        held.close();
        List<CompletableFuture<Lease>> waiting = new ArrayList<>(pending);
        for (int released = 1; released <= waiters; released++) {
            await().atMost(scaled(10)).until(() -> waiting.stream().anyMatch(CompletableFuture::isDone));
            List<CompletableFuture<Lease>> granted =
                    waiting.stream().filter(CompletableFuture::isDone).toList();
            // Exactly one waiter is granted per release, and the server published exactly one wake-up.
            assertThat(granted).hasSize(1);
            assertThat(publishCount() - publishesBefore).isEqualTo(released);
            waiting.removeAll(granted);
            assertThat(waiting).noneMatch(CompletableFuture::isDone);
            granted.get(0).get().close();
        }
        // The last release had nobody to wake.
        assertThat(publishCount() - publishesBefore).isEqualTo(waiters);
        assertThat(entries("herd")).isEmpty();
    }

    @Test
    void capabilities_areTruthful() {
        assertThat(client().capabilities())
                .contains(
                        Capability.EXCLUSIVE,
                        Capability.FAIR,
                        Capability.FENCING_TOKENS,
                        Capability.READ_WRITE,
                        Capability.SEMAPHORE,
                        Capability.MULTI_LOCK,
                        Capability.LOST_DETECTION,
                        Capability.CRASH_RELEASE,
                        Capability.NO_HERD,
                        Capability.RENEWAL);
        assertThat(client("fair=false").capabilities())
                .doesNotContain(Capability.FAIR)
                .contains(Capability.EXCLUSIVE);
    }

    @Test
    void unfair_holderAndWaiters_stillExcludeEachOther() throws Exception {
        Contention.Result r = Contention.run(
                new LockClient[] {client("fair=false"), client("fair=false")}, "unfair", 4, 100, Duration.ofMinutes(2));
        assertThat(r.checker().counter()).isEqualTo(400);
        assertThat(r.checker().violations()).isZero();
        assertThat(r.store().rejectedWrites()).isZero();
    }
}
