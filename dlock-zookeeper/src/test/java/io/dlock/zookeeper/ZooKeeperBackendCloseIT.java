package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import io.dlock.spi.LockProtocol;
import io.dlock.spi.LockRequest;
import io.dlock.spi.Position;
import io.dlock.spi.QueueEntry;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@link ZooKeeperBackend#close()} while the protocol's stages are still in flight (issue 19, item
 * 3, the backend's part): the engine answers its own callers on close, but every stage the backend
 * handed out must complete too, promptly, not after a connect timeout or never. The lookups and
 * deletes retry without an attempt bound while the session lives, so only the close can end them.
 */
class ZooKeeperBackendCloseIT extends ZooKeeperTestSupport {

    @Test
    void close_withEveryKindOfStageInFlight_completesThemAllPromptly() throws Exception {
        // A connect timeout far longer than the bound below: nothing may wait for it.
        BackendUri uri = BackendUri.parse(
                URI.create(uri("sessionTimeout=4s&connectTimeout=20s")), LockOptions.defaults(), Set.of());
        ZooKeeperBackend backend = ZooKeeperBackend.connect(ZooKeeperUri.from(uri));
        LockProtocol protocol = backend.protocol();
        Lease held = client().lock("closing").acquire();
        Position waiting = get(protocol.enqueue(
                LockRequest.exclusive("closing", UUID.randomUUID().toString())));
        Position other = get(protocol.enqueue(
                LockRequest.exclusive("closing", UUID.randomUUID().toString())));
        assertThat(waiting.isGranted()).isFalse();
        assertThat(other.isGranted()).isFalse();
        CompletableFuture<Position> turn = protocol.awaitTurn(waiting).toCompletableFuture();

        server.stop(); // every request from now on meets connection trouble
        try {
            CompletableFuture<Optional<QueueEntry>> lookup = protocol.findOwnEntry(
                            "closing", UUID.randomUUID().toString())
                    .toCompletableFuture();
            CompletableFuture<Position> enqueue = protocol.enqueue(
                            LockRequest.exclusive("closing", UUID.randomUUID().toString()))
                    .toCompletableFuture();
            CompletableFuture<Void> release = protocol.release(other.entry()).toCompletableFuture();
            List<CompletableFuture<?>> stages = List.of(turn, lookup, enqueue, release);
            Thread.sleep(1_500); // let each meet the outage and start retrying
            assertThat(stages).allSatisfy(s -> assertThat(s).isNotDone());

            long closing = System.nanoTime();
            backend.close();
            await().atMost(Duration.ofSeconds(3)).until(() -> stages.stream().allMatch(CompletableFuture::isDone));
            assertThat(Duration.ofNanos(System.nanoTime() - closing)).isLessThan(Duration.ofSeconds(5));

            assertThat(turn).isCompletedExceptionally(); // the session is closed: the wait is over
            assertThat(enqueue).isCompletedExceptionally();
            assertThat(lookup).isCompletedWithValue(Optional.empty()); // the session ended with the client
            assertThat(release).isCompleted().isNotCompletedExceptionally();
            // After close, new stages complete at once.
            assertThat(protocol.findOwnEntry("closing", "late").toCompletableFuture())
                    .isCompletedWithValue(Optional.empty());
            assertThat(protocol.enqueue(LockRequest.exclusive("closing", "late"))
                            .toCompletableFuture())
                    .isCompletedExceptionally();
            assertThat(protocol.release(waiting.entry()).toCompletableFuture()).isCompleted();
        } finally {
            backend.close();
            server.restart();
        }
        held.close();
        await().atMost(Duration.ofSeconds(15)).until(() -> children("closing").isEmpty());
    }

    private static <T> T get(java.util.concurrent.CompletionStage<T> stage) throws Exception {
        return stage.toCompletableFuture().get(10, TimeUnit.SECONDS);
    }
}
