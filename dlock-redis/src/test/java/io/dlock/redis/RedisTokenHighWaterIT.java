package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Lease;
import io.dlock.LockClient;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Fencing tokens keep rising when the server clock does not: the epoch marker keeps the highest
 * token granted under the key prefix, which outlives each lock's queue, and every grant exceeds it.
 * A clock that stepped back is simulated by a high-water mark a day ahead of the server's clock.
 */
class RedisTokenHighWaterIT extends RedisTestSupport {

    /** Server tokens are the lease's token without the engine's local hand-off bits (× 1024). */
    private static long serverToken(Lease lease) {
        return lease.fencingToken() >> 10;
    }

    private String marker() {
        return (String) server.command("GET", RedisLockProtocol.serverEpochKey(prefix));
    }

    @SuppressWarnings("unchecked")
    private static long serverMicros() {
        List<Object> t = (List<Object>) server.command("TIME");
        return Long.parseLong(t.get(0).toString()) * 1_000_000
                + Long.parseLong(t.get(1).toString());
    }

    @Test
    void release_queueDeleted_highWaterStaysInTheMarker() throws Exception {
        long token;
        try (Lease lease = client().lock("kept").acquire()) {
            token = serverToken(lease);
        }
        assertThat(keys()).isEmpty(); // the lock's own keys are gone
        assertThat(marker()).isEqualTo("=" + token);
    }

    @Test
    void acquire_highWaterAheadOfTheClock_tokensExceedItAndKeepRising() throws Exception {
        long ahead = serverMicros() + TimeUnit.DAYS.toMicros(1);
        server.command("SET", RedisLockProtocol.serverEpochKey(prefix), "=" + ahead);
        LockClient client = client();
        long first;
        try (Lease lease = client.lock("idle").acquire()) { // the uncontended fast path
            first = serverToken(lease);
        }
        try (Lease lease = client.lock("other-name").acquire()) {
            assertThat(first).isEqualTo(ahead + 1);
            assertThat(serverToken(lease)).isEqualTo(ahead + 2);
        }
        assertThat(marker()).isEqualTo("=" + (ahead + 2));
    }

    @Test
    void waiterGranted_highWaterAheadOfTheClock_tokenExceedsIt() throws Exception {
        LockClient a = client();
        LockClient b = client();
        Lease held = a.lock("queued").acquire();
        CompletableFuture<Lease> waiting = b.lock("queued").acquireAsync(scaled(10));
        long ahead = serverMicros() + TimeUnit.DAYS.toMicros(1);
        server.command("SET", RedisLockProtocol.serverEpochKey(prefix), "=" + ahead);
        held.close(); // the waiter is granted by the queue's script, not the fast path
        try (Lease next = waiting.get(10, TimeUnit.SECONDS)) {
            assertThat(serverToken(next)).isEqualTo(ahead + 1);
            assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
        }
        assertThat(marker()).isEqualTo("=" + (ahead + 1));
    }
}
