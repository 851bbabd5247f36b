package io.dlock.memcached;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Capability;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.ExclusiveLockContract;
import io.dlock.testkit.LockFixture;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * The exclusive lock on memcached, through the public API: the testkit's contract, plus what is
 * memcached's own (no FIFO, the capabilities, fair=true refused).
 */
class MemcachedLockIT extends MemcachedTestSupport implements ExclusiveLockContract {

    /**
     * Not applicable: memcached has no queue, so {@code capabilities()} lacks FAIR and the contract's
     * arrival-order test cannot hold. What this backend promises instead is checked: every waiter
     * is seen on the server (its waiter key), and each is granted exactly once, one at a time.
     */
    @Test
    @Override
    public void acquire_waiters_grantedInArrivalOrder() throws Exception {
        LockClient holderClient = newClient();
        LockClient waiterClient = client(LockFixture.options(patient(), "localQueueing=false"));
        assertThat(waiterClient.capabilities()).doesNotContain(Capability.FAIR, Capability.NO_HERD);
        Lease held = holderClient.lock("fifo").acquire();
        List<Integer> order = new CopyOnWriteArrayList<>();
        List<Thread> waiters = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            int id = i;
            Thread t = new Thread(() -> {
                try (Lease lease = waiterClient.lock("fifo").acquire()) {
                    order.add(id);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            t.start();
            waiters.add(t);
            int expected = i + 2;
            await().atMost(scaled(10)).until(() -> entries("fifo").size() == expected);
        }
        held.close();
        for (Thread t : waiters) {
            t.join(scaled(20).toMillis());
        }
        assertThat(order).containsExactlyInAnyOrder(0, 1, 2, 3, 4, 5);
    }

    @Test
    void capabilities_areTruthful() {
        assertThat(client().capabilities())
                .containsExactlyInAnyOrder(
                        Capability.EXCLUSIVE,
                        Capability.FENCING_TOKENS,
                        Capability.MULTI_LOCK,
                        Capability.LOST_DETECTION,
                        Capability.CRASH_RELEASE,
                        Capability.RENEWAL);
        LockClient c = client("fair=false");
        assertThatThrownBy(() -> c.readWriteLock("rw"))
                .isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("READ_WRITE");
        assertThatThrownBy(() -> c.semaphore("s", 2))
                .isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("SEMAPHORE");
    }

    @Test
    void connect_fairTrue_refusedWithTheReason() {
        assertThatThrownBy(() -> LockClient.connect(uri("fair=true")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fair")
                .hasMessageContaining("no queue");
    }

    @Test
    void tokens_comeFromTheCounterAboveTheServerClockFloor() throws Exception {
        long serverMicros = Long.parseLong(server.command("stats")
                        .lines()
                        .filter(l -> l.startsWith("STAT time "))
                        .findFirst()
                        .orElseThrow()
                        .substring(10))
                * 1_000_000L;
        LockClient c = client();
        long first;
        try (Lease l = c.lock("floor").acquire()) {
            first = l.fencingToken();
        }
        // The engine keeps 10 low bits for local hand-offs; the counter was created at the clock floor.
        assertThat(first >> 10).isBetween(serverMicros - 5_000_000L, serverMicros + 5_000_000L);
        assertThat(server.command("mg " + prefix + ":t:floor v")).endsWith("\n" + (first >> 10));
    }
}
