package io.dlock.memcached;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import io.dlock.spi.LockRequest;
import io.dlock.spi.Position;
import io.dlock.testkit.FaultProxy;
import java.net.URI;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A client's connection dropped or partitioned (a {@link FaultProxy} between it and memcached) at
 * the worst moments: while it releases, and while its own add's reply is on the way. Each test uses
 * a 30 s lease, so a key left behind would block the lock far longer than the test waits.
 */
class MemcachedConnectionFaultIT extends MemcachedTestSupport {

    private LockClient throughProxy(FaultProxy proxy, String query) {
        return track(LockClient.connect("memcached://" + proxy.connectString() + "?keyPrefix=" + prefix + "&" + query));
    }

    private String lockKey(String lock) {
        return prefix + ":l:" + lock;
    }

    @Test
    void close_whileDisconnected_keyDeletedOnceReconnected() throws Exception {
        try (FaultProxy proxy = FaultProxy.start(server.port())) {
            LockClient holder = throughProxy(proxy, "leaseTime=30s&connectTimeout=2s");
            LockClient other = client("leaseTime=30s");
            Lease lease = holder.lock("dropped").acquire();
            proxy.refuse(); // reconnects fail until pass()
            proxy.resetConnections();
            lease.close(); // the delete cannot be sent now
            assertThat(server.command("mg " + lockKey("dropped") + " v"))
                    .as("the key right after the close")
                    .startsWith("VA");
            assertThat(other.lock("dropped").tryAcquire(Duration.ZERO)).isEmpty();

            proxy.pass();
            // The holder reconnects (within a second) and deletes its key: long before the 31 s expiry.
            Optional<Lease> next = other.lock("dropped").tryAcquire(scaled(5));
            assertThat(next)
                    .as("granted to another client after the holder reconnected")
                    .isPresent();
            assertThat(next.orElseThrow().fencingToken()).isGreaterThan(lease.fencingToken());
            next.orElseThrow().close();
        }
    }

    @Test
    void close_deleteLostInAPartition_keyDeletedOnceItHeals() throws Exception {
        try (FaultProxy proxy = FaultProxy.start(server.port())) {
            LockClient holder = throughProxy(proxy, "leaseTime=30s&connectTimeout=1s");
            LockClient other = client("leaseTime=30s");
            Lease lease = holder.lock("partitioned").acquire();
            // The delete goes into the partition; the client's timeout closes the connection, and
            // reconnecting times out too while it lasts.
            proxy.blackhole(FaultProxy.Direction.BOTH);
            lease.close();
            await().atMost(scaled(5)).until(() -> proxy.droppedBytes() > 0);
            assertThat(server.command("mg " + lockKey("partitioned") + " v"))
                    .as("the key while the partition lasts")
                    .startsWith("VA");

            proxy.pass();
            Optional<Lease> next = other.lock("partitioned").tryAcquire(scaled(8));
            assertThat(next)
                    .as("granted to another client after the partition healed")
                    .isPresent();
            next.orElseThrow().close();
        }
    }

    @Test
    void acquire_replyToItsAddLost_findsItsOwnKeyAndIsGranted() throws Exception {
        try (FaultProxy proxy = FaultProxy.start(server.port())) {
            LockClient c = throughProxy(proxy, "leaseTime=30s&connectTimeout=2s");
            LockClient other = client("leaseTime=30s");
            long before;
            try (Lease l = other.lock("lost").acquire()) {
                before = l.fencingToken();
            }
            // The add lands; its reply (and the token's) never comes back.
            proxy.blackhole(FaultProxy.Direction.DOWNSTREAM);
            CompletableFuture<Lease> acquired = c.lock("lost").acquireAsync(scaled(20));
            await().atMost(scaled(5))
                    .until(() -> server.command("mg " + lockKey("lost") + " v").startsWith("VA"));
            proxy.pass();
            proxy.resetConnections();

            Lease lease = acquired.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
            assertThat(lease.isValid()).isTrue();
            assertThat(lease.fencingToken()).isGreaterThan(before);
            assertThat(other.lock("lost").tryAcquire(Duration.ZERO)).isEmpty();
            lease.close();
            Optional<Lease> next = other.lock("lost").tryAcquire(scaled(2));
            assertThat(next).as("granted to another client after the release").isPresent();
            assertThat(next.orElseThrow().fencingToken()).isGreaterThan(lease.fencingToken());
            next.orElseThrow().close();
        }
    }

    /**
     * A waiter's poll whose add landed but whose reply was lost leaves the waiter's own value in
     * the lock key; its next polls get NS from its own key. Driving that interleaving through the
     * proxy is a race (the add must reach memcached after the holder's delete and before the
     * replies are cut), so this test writes the waiter's own value into the key itself, as the lost
     * add would have, on the protocol with a real server: the next poll must take it as its grant,
     * with a token above every earlier one, and refresh its TTL.
     */
    @Test
    void poll_lockKeyHoldsTheWaitersOwnValue_grantedAtOnceWithANewerToken() throws Exception {
        BackendUri parsed =
                BackendUri.parse(URI.create(uri("leaseTime=30s")), LockOptions.defaults(), MemcachedUri.PARAMETERS);
        MemcachedBackend backend = track(MemcachedBackend.connect(MemcachedUri.from(parsed)));
        MemcachedLockProtocol protocol = (MemcachedLockProtocol) backend.protocol();
        String key = lockKey("own");
        String foreign = "someone-else other-client";
        assertThat(server.command("ms " + key + " " + foreign.length() + " T30\r\n" + foreign))
                .isEqualTo("HD");

        Position waiting = protocol.enqueue(LockRequest.exclusive("own", "acq-1"))
                .toCompletableFuture()
                .get(5, TimeUnit.SECONDS);
        assertThat(waiting.isGranted()).isFalse();
        CompletableFuture<Position> turn = protocol.awaitTurn(waiting).toCompletableFuture();
        long counterBefore = Long.parseLong(
                server.command("mg " + prefix + ":t:own v").split("\n")[1].trim());

        // Another acquisition of the same client is not this one: still waiting.
        String sibling = "acq-2 " + backend.clientId;
        assertThat(server.command("ms " + key + " " + sibling.length() + " T30\r\n" + sibling))
                .isEqualTo("HD");
        // Several polls (at most 200 ms apart) see the sibling's key, and none takes it.
        await().during(scaled(1)).atMost(scaled(2)).until(() -> !turn.isDone());

        // The waiter's own add, as if its reply had been lost, with a TTL well below the lease's.
        String own = "acq-1 " + backend.clientId;
        assertThat(server.command("ms " + key + " " + own.length() + " T10\r\n" + own))
                .isEqualTo("HD");
        Position granted = turn.get(scaled(3).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(granted.isGranted()).isTrue();
        assertThat(granted.grant().fencingToken()).isGreaterThan(counterBefore);
        String refreshed = server.command("mg " + key + " v t");
        assertThat(refreshed.split("\n")[1]).startsWith("acq-1 ");
        assertThat(ttlOf(refreshed)).as("the adopted key's TTL").isGreaterThan(20);

        protocol.release(granted.entry()).toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertThat(server.command("mg " + key + " v")).isEqualTo("EN");
    }

    private static long ttlOf(String mgReply) {
        for (String token : mgReply.split("\n")[0].split(" ")) {
            if (token.startsWith("t")) {
                return Long.parseLong(token.substring(1));
            }
        }
        throw new AssertionError("no TTL in " + mgReply);
    }
}
