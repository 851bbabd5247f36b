package io.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The engine tells the protocol when the calling thread only waits for the answer (a blocking
 * acquire's first request, a lease's close), and only then: a backend may run those on the caller
 * ({@code LockProtocol#enqueue(LockRequest, boolean)}).
 */
class CallerWaitsTest {
    private final InMemoryBackend backend = InMemoryBackend.create();
    private final LockClient client = InMemoryBackend.client(backend);

    @AfterEach
    void close() {
        client.close();
    }

    @Test
    void blockingAcquireAndClose_sayTheCallerWaits() throws Exception {
        String me = Thread.currentThread().getName();
        try (Lease lease = client.lock("a").acquire()) {
            assertThat(lease.isValid()).isTrue();
        }
        try (Lease lease = client.lock("a").tryAcquire(Duration.ofSeconds(5)).orElseThrow()) {
            assertThat(lease.isValid()).isTrue();
        }
        assertThat(backend.callerWaits)
                .containsExactly(
                        "enqueue true " + me, "release true " + me, "enqueue true " + me, "release true " + me);
    }

    @Test
    void asyncAcquire_saysNot_butItsCloseDoes() throws Exception {
        String me = Thread.currentThread().getName();
        Lease lease = client.lock("b").acquireAsync(Duration.ofSeconds(5)).get(5, TimeUnit.SECONDS);
        lease.close();
        assertThat(backend.callerWaits).containsExactly("enqueue false " + me, "release true " + me);
    }

    @Test
    void aLocalHandOff_sendsNothing_andTheNewHoldersCloseWaitsOnItsOwnThread() throws Exception {
        DistributedLock lock = client.lock("c");
        Lease first = lock.acquire();
        Thread waiter = new Thread(() -> {
            try (Lease second = lock.acquire()) {
                assertThat(second.isValid()).isTrue();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        waiter.start();
        org.awaitility.Awaitility.await()
                .atMost(Duration.ofSeconds(10))
                .until(() -> waiter.getState() == Thread.State.WAITING);
        backend.callerWaits.clear();
        first.close(); // hands the grant to the waiter in memory: nothing reaches the protocol
        waiter.join(10_000);
        assertThat(waiter.isAlive()).isFalse();
        // The waiter's own close releases on its own thread, which waits for it.
        assertThat(backend.callerWaits).containsExactly("release true " + waiter.getName());
        assertThat(List.copyOf(backend.callerWaits)).noneMatch(s -> s.startsWith("enqueue"));
    }
}
