package io.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.spi.ConnectionState;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * An outage the engine reports itself (a request left unanswered, a wait or a zero-wait attempt on
 * a connection known to be down) names the server's address, never its credentials, and carries the
 * last connection error as its cause. Over {@link InMemoryBackend}, whose address is {@code
 * inmemory://server/session-N}.
 */
class OutageMessageTest {
    private final List<LockClient> clients = new CopyOnWriteArrayList<>();
    private InMemoryBackend.Server server;

    @BeforeEach
    void setUp() {
        server = new InMemoryBackend.Server();
    }

    @AfterEach
    void tearDown() {
        clients.forEach(LockClient::close);
    }

    private LockClient client(InMemoryBackend backend) {
        LockClient c = LockEngine.newClient(
                backend,
                LockOptions.builder()
                        .callbackThreads(1)
                        .connectTimeout(Duration.ofMillis(300))
                        .build());
        clients.add(c);
        return c;
    }

    @Test
    void tryAcquire_requestUnanswered_namesAddressWithTimeoutAsCause() {
        InMemoryBackend b = server.connect();
        LockClient c = client(b);
        b.holdEnqueueReplies(true);

        LockBackendException e = catchThrowableOfType(
                () -> c.lock("orders").tryAcquire(Duration.ofMillis(100)), LockBackendException.class);

        assertThat(e).hasMessageContaining("no answer from inmemory://server/session-");
        assertThat(e.getCause())
                .isInstanceOf(TimeoutException.class)
                .hasMessageContaining("inmemory://server/session-");
        b.holdEnqueueReplies(false);
        b.deliverHeldReplies();
    }

    /**
     * acquire() has no wait to bound it: an unanswered request (a partition, a failover) is waited
     * for, and the reply, when it comes, grants the lock.
     */
    @Test
    void acquire_requestUnanswered_waitsThroughIt_grantedWhenTheReplyComes() throws Exception {
        InMemoryBackend b = server.connect();
        LockClient c = client(b);
        b.holdEnqueueReplies(true); // a partition: the reply does not come back yet
        java.util.concurrent.CompletableFuture<Boolean> plain =
                java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                    try (io.dlock.Lease lease = c.lock("orders").acquire()) {
                        return lease.isValid();
                    } catch (InterruptedException e) {
                        throw new java.util.concurrent.CompletionException(e);
                    }
                });
        // Still waiting all through an outage of over three times connectTimeout (300 ms).
        org.awaitility.Awaitility.await()
                .during(Duration.ofSeconds(1))
                .atMost(Duration.ofSeconds(2))
                .until(() -> !plain.isDone());
        b.holdEnqueueReplies(false);
        b.deliverHeldReplies();
        assertThat(plain.get(5, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
    }

    /**
     * A backend whose client library never reports the connection down (a SQL pool, etcd's gRPC
     * channel) but left a request unanswered: for connectTimeout after that, a zero-wait attempt on
     * any lock fails at once and sends nothing; after it, the next attempt is sent (and finds out).
     */
    @Test
    void tryAcquireZero_afterARequestWentUnanswered_failsAtOnceWithinConnectTimeoutThenProbes() throws Exception {
        InMemoryBackend b = server.connect();
        LockClient c = client(b);
        b.holdEnqueueReplies(true);
        catchThrowableOfType(() -> c.lock("first").tryAcquire(Duration.ZERO), LockBackendException.class);
        int sent = server.enqueues.get();

        long t0 = System.nanoTime();
        LockBackendException fast =
                catchThrowableOfType(() -> c.lock("other").tryAcquire(Duration.ZERO), LockBackendException.class);
        assertThat(java.util.concurrent.TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0))
                .isLessThan(200);
        assertThat(fast)
                .hasMessageContaining("a request to inmemory://server/session-")
                .hasMessageContaining("went unanswered");
        assertThat(fast.getCause()).isInstanceOf(TimeoutException.class);
        assertThat(server.enqueues.get()).isEqualTo(sent);

        Thread.sleep(350); // past connectTimeout (300 ms): the next attempt is sent
        b.holdEnqueueReplies(false);
        b.deliverHeldReplies();
        org.awaitility.Awaitility.await().atMost(Duration.ofSeconds(5)).until(() -> server.totalEntries() == 0);
        try (io.dlock.Lease l = c.lock("other").tryAcquire(Duration.ZERO).orElseThrow()) {
            assertThat(l.isValid()).isTrue();
        }
        assertThat(server.enqueues.get()).isGreaterThan(sent);
    }

    @Test
    void tryAcquireZero_connectionDown_carriesTheLastFailureUntilReconnected_thenTheReportedDrop() throws Exception {
        InMemoryBackend b = server.connect();
        LockClient c = client(b);
        b.failNextEnqueue(InMemoryBackend.FailMode.BEFORE_APPLY); // the connection reset under a request

        LockBackendException failed =
                catchThrowableOfType(() -> c.lock("orders").tryAcquire(Duration.ZERO), LockBackendException.class);
        assertThat(failed).hasMessageContaining("request to inmemory://server/session-");
        assertThat(failed.getCause()).hasMessageContaining("enqueue refused (test)");
        assertThat(failed.getMessage()).containsOnlyOnce("lock 'orders' on ");

        b.emit(ConnectionState.SUSPENDED); // the client library noticed the drop
        LockBackendException down =
                catchThrowableOfType(() -> c.lock("orders").tryAcquire(Duration.ZERO), LockBackendException.class);
        assertThat(down).hasMessageContaining("connection to inmemory://server/session-");
        assertThat(down.getCause()).isNotNull().hasMessageContaining("enqueue refused (test)");

        b.emit(ConnectionState.RECONNECTED); // back: the old failure explains nothing any more
        b.emit(ConnectionState.SUSPENDED);
        LockBackendException again =
                catchThrowableOfType(() -> c.lock("orders").tryAcquire(Duration.ZERO), LockBackendException.class);
        assertThat(again).hasMessageContaining("is down");
        // No request failed since: the cause is the drop the backend reported, and when.
        assertThat(again.getCause())
                .isInstanceOf(java.io.IOException.class)
                .hasMessageContaining("reported its connection to inmemory://server/session-")
                .hasMessageMatching(".* lost \\d+ ms ago and has not reconnected since")
                .hasMessageNotContaining("enqueue refused");
    }

    @Test
    void addressOf_backendToStringWithCredentials_keepsHostAndDropsSecrets() {
        assertThat(EngineClient.addressOf("RedisBackend[redis://bob:Sekr3t@127.0.0.1:6379?keyPrefix=p, client 3]"))
                .isEqualTo("redis://127.0.0.1:6379?keyPrefix=p");
        assertThat(EngineClient.addressOf("ZooKeeperBackend[zookeeper://u:***@h1:2181,h2:2181/ns]"))
                .isEqualTo("zookeeper://h1:2181,h2:2181/ns");
        assertThat(EngineClient.addressOf("JdbcBackend[jdbc:h2:tcp://127.0.0.1:9092/mem:x;USER=sa;PASSWORD=Sekr3t,"
                        + " table t, client 1]"))
                .isEqualTo("jdbc:h2:tcp://127.0.0.1:9092/mem:x;USER=sa;PASSWORD=***");
        assertThat(EngineClient.addressOf("x://127.0.0.1:1/db?user=u&password=Sekr3t&ssl=true"))
                .isEqualTo("x://127.0.0.1:1/db?user=u&password=***&ssl=true");
        assertThat(EngineClient.addressOf("io.dlock.SomeBackend@1b2c3d")).isEqualTo("io.dlock.SomeBackend@1b2c3d");
    }
}
