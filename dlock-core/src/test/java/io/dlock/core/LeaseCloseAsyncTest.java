package io.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Capability;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link Lease#closeAsync()} over {@link InMemoryBackend}, whose releases can be held back: the
 * lease is invalid at once, the stage completes only once the backend applied the release, and
 * the client's close waits for it.
 */
class LeaseCloseAsyncTest {
    private static final Set<Capability> CAPABILITIES = with(Capability.MULTI_LOCK);

    private static Set<Capability> with(Capability more) {
        EnumSet<Capability> all = EnumSet.copyOf(InMemoryBackend.DEFAULT_CAPABILITIES);
        all.add(more);
        return Set.copyOf(all);
    }

    private final List<LockClient> clients = new CopyOnWriteArrayList<>();
    private final ExecutorService threads = Executors.newCachedThreadPool();
    private InMemoryBackend.Server server;
    private InMemoryBackend backend;
    private LockClient client;

    @BeforeEach
    void setUp() {
        server = new InMemoryBackend.Server();
        backend = server.connect(CAPABILITIES);
        client = open(backend);
    }

    @AfterEach
    void tearDown() {
        backend.holdReleases(false);
        backend.deliverHeldReleases();
        threads.shutdownNow();
        clients.forEach(LockClient::close);
    }

    private LockClient open(InMemoryBackend b) {
        LockClient c =
                LockEngine.newClient(b, LockOptions.builder().callbackThreads(1).build());
        clients.add(c);
        return c;
    }

    private static void stillPending(Future<?> f) {
        await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(1)).until(() -> !f.isDone());
    }

    @Test
    void closeAsync_returnsBeforeTheBackendConfirms_andItsStageCompletesWhenItDoes() throws Exception {
        Lease lease = client.lock("x").acquire();
        backend.holdReleases(true);

        CompletableFuture<Void> released = lease.closeAsync().toCompletableFuture();

        assertThat(lease.isValid()).isFalse();
        assertThat(client.lock("x").isHeldByCurrentThread()).isFalse();
        await().atMost(Duration.ofSeconds(5)).until(() -> backend.heldReleases() == 1);
        stillPending(released);
        assertThat(server.queue("x"))
                .as("the entry stays until the release is applied")
                .hasSize(1);

        backend.deliverHeldReleases();

        released.get(5, TimeUnit.SECONDS);
        assertThat(server.queue("x")).isEmpty();
        assertThat(lease.closeAsync().toCompletableFuture()).as("closing again").isCompletedWithValue(null);
    }

    @Test
    void closeAsync_stageCompletedByTheCaller_doesNotEndTheRelease() throws Exception {
        Lease lease = client.lock("x").acquire();
        backend.holdReleases(true);
        CompletableFuture<Void> released = lease.closeAsync().toCompletableFuture();
        released.complete(null);
        await().atMost(Duration.ofSeconds(5)).until(() -> backend.heldReleases() == 1);

        Future<?> closing = threads.submit(client::close);

        stillPending(closing); // the client still counts the release as in flight
        backend.deliverHeldReleases();
        closing.get(5, TimeUnit.SECONDS);
        assertThat(server.queue("x")).isEmpty();
    }

    @Test
    void closeAsync_ofANestedLease_onlyDropsAHold() throws Exception {
        Lease outer = client.lock("x").acquire();
        Lease inner = client.lock("x").acquire();

        assertThat(inner.closeAsync().toCompletableFuture()).isCompletedWithValue(null);

        assertThat(outer.isValid()).isTrue();
        assertThat(client.lock("x").isHeldByCurrentThread()).isTrue();
        assertThat(server.queue("x")).hasSize(1);
        outer.closeAsync().toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertThat(server.queue("x")).isEmpty();
    }

    @Test
    void closeAsync_byAThreadThatDoesNotOwnTheLease_isRefused_andTheLockStaysHeld() throws Exception {
        Lease lease = client.lock("x").acquire();
        AtomicReference<Throwable> thrown = new AtomicReference<>();

        threads.submit(() -> {
                    try {
                        lease.closeAsync();
                    } catch (Throwable t) {
                        thrown.set(t);
                    }
                })
                .get(5, TimeUnit.SECONDS);

        assertThat(thrown.get())
                .isInstanceOf(IllegalMonitorStateException.class)
                .hasMessageContaining("'x'");
        assertThat(lease.isValid()).isTrue();
        assertThat(server.queue("x")).hasSize(1);
        lease.closeAsync().toCompletableFuture().get(5, TimeUnit.SECONDS);
        assertThat(server.queue("x")).isEmpty();
    }

    @Test
    void closeAsync_ofAnAsyncLease_fromAnyThread_andOfAMultiLock_releasesEveryPart() throws Exception {
        Lease single = client.lock("a").acquireAsync(Duration.ofSeconds(5)).get(5, TimeUnit.SECONDS);
        Lease multi = client.multiLock(List.of("b", "c")).acquire();

        threads.submit(() -> single.closeAsync().toCompletableFuture().join()).get(5, TimeUnit.SECONDS);
        backend.holdReleases(true);
        CompletableFuture<Void> both = multi.closeAsync().toCompletableFuture();
        await().atMost(Duration.ofSeconds(5)).until(() -> backend.heldReleases() == 2);
        stillPending(both);
        backend.deliverHeldReleases();
        both.get(5, TimeUnit.SECONDS);

        assertThat(multi.isValid()).isFalse();
        assertThat(List.of(server.queue("a"), server.queue("b"), server.queue("c")))
                .allSatisfy(q -> assertThat(q).isEmpty());
        assertThatThrownBy(() -> single.checkValid()).hasMessageContaining("closed");
    }
}
