package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import io.dlock.spi.EntryLostException;
import io.dlock.spi.Grant;
import io.dlock.spi.LockRequest;
import io.dlock.spi.Position;
import io.dlock.spi.QueueEntry;
import java.net.URI;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The recipe's rules, driven through the SPI directly. */
class RedisLockProtocolIT extends RedisTestSupport {

    private RedisBackend backend(String query) {
        BackendUri uri = BackendUri.parse(URI.create(uri(query)), LockOptions.defaults(), RedisUri.PARAMETERS);
        return track(RedisConnector.connect(RedisUri.from(uri)));
    }

    private static <T> T get(CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    private static LockRequest request(String lock) {
        return LockRequest.exclusive(lock, UUID.randomUUID().toString());
    }

    @Test
    void enqueue_sameAcquisitionTwice_keepsOneEntryAndOneToken() throws Exception {
        RedisBackend backend = backend("");
        LockRequest request = request("retry");
        Position first = get(backend.protocol().enqueue(request));
        // What a retry after a lost reply does: the same acquisition id again.
        Position second = get(backend.protocol().enqueue(request));
        assertThat(first.isGranted()).isTrue();
        assertThat(second.isGranted()).isTrue();
        assertThat(second.grant().fencingToken()).isEqualTo(first.grant().fencingToken());
        assertThat(entries("retry")).containsExactly(request.acquisitionId());
        get(backend.protocol().release(first.entry()));
        assertThat(keys()).isEmpty();
    }

    @Test
    void renew_heldGrant_extendsDeadlineOnServerAndClient() throws Exception {
        RedisBackend backend = backend("leaseTime=2s");
        Position p = get(backend.protocol().enqueue(request("renew")));
        Grant grant = p.grant();
        double before = deadline(server, prefix + ":{renew}:x", p.entry().acquisitionId());
        long t0 = serverMillis(server);
        await().atMost(RedisTestSupport.scaled(5)).until(() -> serverMillis(server) >= t0 + 300);
        Grant renewed = get(backend.protocol().renew(grant));
        double after = deadline(server, prefix + ":{renew}:x", p.entry().acquisitionId());
        assertThat(renewed.fencingToken()).isEqualTo(grant.fencingToken());
        assertThat(renewed.validUntilNanos()).isGreaterThan(grant.validUntilNanos());
        assertThat(after).isGreaterThanOrEqualTo(before + 250);
        // The client's validity never outlives the server's deadline.
        long pttl = (Long) server.command("PTTL", prefix + ":{renew}:x:s");
        assertThat(renewed.validUntilNanos() - System.nanoTime())
                .isLessThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(pttl));
        get(backend.protocol().release(p.entry()));
    }

    @Test
    void renew_afterLeaseRanOutAndAnotherGot_failsWithEntryLost() throws Exception {
        RedisBackend first = backend("leaseTime=300ms");
        RedisBackend second = backend("leaseTime=5s");
        Position p = get(first.protocol().enqueue(request("expired")));
        double deadline = deadline(server, prefix + ":{expired}:x", p.entry().acquisitionId());
        await().atMost(RedisTestSupport.scaled(5)).until(() -> serverMillis(server) > deadline);
        Position next = get(second.protocol().enqueue(request("expired")));
        assertThat(next.isGranted()).isTrue();
        assertThat(next.grant().fencingToken()).isGreaterThan(p.grant().fencingToken());
        assertThatThrownBy(() -> get(first.protocol().renew(p.grant())))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOf(EntryLostException.class)
                .hasMessageContaining("expired");
        // The lapsed lease can not be revived either, even with nobody else holding.
        get(second.protocol().release(next.entry()));
        assertThatThrownBy(() -> get(first.protocol().renew(p.grant()))).cause().isInstanceOf(EntryLostException.class);
        assertThat(keys()).isEmpty();
    }

    @Test
    void waiter_thatStopsChecking_isPurgedAfterItsTtl() throws Exception {
        RedisBackend holder = backend("leaseTime=5s");
        RedisBackend crashed = backend("leaseTime=400ms");
        Position held = get(holder.protocol().enqueue(request("purge")));
        Position waiting = get(crashed.protocol().enqueue(request("purge")));
        assertThat(waiting.isGranted()).isFalse();
        assertThat(waiting.predecessor()).isEqualTo(held.entry().acquisitionId());
        crashed.close(); // its waiter stops heartbeating, as a crashed process would
        // Read afresh on every poll: a heartbeat in flight at close may still push the deadline out.
        await().atMost(RedisTestSupport.scaled(5))
                .until(() -> serverMillis(server)
                        > deadline(
                                server, prefix + ":{purge}:x", waiting.entry().acquisitionId()));
        // The next script on this lock purges the stale waiter: nobody queues behind a ghost.
        Position third = get(holder.protocol().enqueue(request("purge")));
        assertThat(entries("purge"))
                .containsExactly(held.entry().acquisitionId(), third.entry().acquisitionId());
        get(holder.protocol().release(held.entry()));
        get(holder.protocol().release(third.entry()));
    }

    @Test
    void findOwnEntry_onlyThisClientsEntries() throws Exception {
        RedisBackend mine = backend("");
        RedisBackend other = backend("");
        LockRequest request = request("own");
        Position p = get(mine.protocol().enqueue(request));
        Optional<QueueEntry> found = get(mine.protocol().findOwnEntry("own", request.acquisitionId()));
        assertThat(found).isPresent();
        assertThat(found.get().key()).isEqualTo(p.entry().key());
        assertThat(found.get().token()).isEqualTo(p.grant().fencingToken());
        assertThat(get(other.protocol().findOwnEntry("own", request.acquisitionId())))
                .isEmpty();
        assertThat(get(mine.protocol().findOwnEntry("own", "no-such-id"))).isEmpty();
        get(mine.protocol().release(p.entry()));
    }

    @Test
    void release_twice_isHarmless() throws Exception {
        RedisBackend backend = backend("");
        Position p = get(backend.protocol().enqueue(request("twice")));
        get(backend.protocol().release(p.entry()));
        get(backend.protocol().release(p.entry()));
        assertThat(keys()).isEmpty();
    }

    @Test
    void keys_carryATtlNoLaterThanTheLatestDeadline() throws Exception {
        RedisBackend backend = backend("leaseTime=3s");
        Position p = get(backend.protocol().enqueue(request("ttl")));
        // A lone holder lives in its own key alone (the fast path), which expires with the lease.
        assertThat(keys()).containsExactly(prefix + ":{ttl}:x:s");
        assertThat((Long) server.command("PTTL", prefix + ":{ttl}:x:s")).isBetween(1L, 3_000L);
        // A waiter turns it into a queue: every key expires no later than a second after the last deadline.
        Position w = get(backend.protocol().enqueue(request("ttl")));
        assertThat(w.isGranted()).isFalse();
        assertThat(keys())
                .containsExactlyInAnyOrder(prefix + ":{ttl}:x:q", prefix + ":{ttl}:x:d", prefix + ":{ttl}:x:h");
        for (String suffix : List.of(":q", ":d", ":h")) {
            long pttl = (Long) server.command("PTTL", prefix + ":{ttl}:x" + suffix);
            assertThat(pttl).as(suffix).isBetween(1L, 4_000L);
        }
        get(backend.protocol().release(w.entry()));
        get(backend.protocol().release(p.entry()));
    }

    @Test
    void connect_setsSuspensionBoundFromLeaseTime() {
        assertThat(backend("leaseTime=9s").maxSuspension()).isEqualTo(java.time.Duration.ofSeconds(3));
    }
}
