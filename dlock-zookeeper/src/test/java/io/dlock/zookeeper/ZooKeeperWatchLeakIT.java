package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.core.LockEngine;
import io.dlock.spi.BackendUri;
import io.dlock.testkit.Timing;
import java.net.URI;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import org.apache.zookeeper.ClientWatches;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.Test;

/**
 * Polling a long-held lock with short waits (issue 19, item 10): every waiter that times out is
 * withdrawn, and must take its watch with it. Before the fix each one left its predecessor watch
 * registered in the client until the holder released (3,000 polls left 1,911 watchers).
 */
class ZooKeeperWatchLeakIT extends ZooKeeperTestSupport {

    private static final int POLLS = 3_000;
    /** Watchers a quiet client may keep: none is expected; a margin for one in flight. */
    private static final int BOUND = 2;

    /** A client over a backend the test can reach, to count the watchers in its handle. */
    private record Poller(LockClient client, ZooKeeperBackend backend) {}

    private Poller poller() {
        BackendUri uri = BackendUri.parse(URI.create(server.uri(namespace)), LockOptions.defaults(), Set.of());
        ZooKeeperBackend backend = ZooKeeperBackend.connect(ZooKeeperUri.from(uri));
        return new Poller(track(LockEngine.newClient(backend, uri.options())), backend);
    }

    @Test
    void tryAcquire_shortWaitsOnAHeldLock_leaveNoWatchBehind() throws Exception {
        Poller poller = poller();
        Lease held = client().lock("polled").acquire();

        int polls =
                poll(poller, "polled", (wait) -> poller.client().lock("polled").tryAcquire(wait));

        assertThat(polls).isGreaterThanOrEqualTo(POLLS / 10);
        await().atMost(Timing.scale(Duration.ofSeconds(5))).untilAsserted(() -> assertThat(
                        ClientWatches.data(zk(poller), root()))
                .as("data watchers left in the client after %d polls: %s", polls, ClientWatches.dataByPath(zk(poller)))
                .isLessThanOrEqualTo(BOUND));
        assertThat(children("polled")).hasSize(1); // the holder's node alone: every waiter withdrew
        assertThat(held.isValid()).isTrue();
        held.close();
        try (Lease mine = poller.client()
                .lock("polled")
                .tryAcquire(Timing.scale(Duration.ofSeconds(5)))
                .orElseThrow()) {
            assertThat(mine.isValid()).isTrue();
        }
        assertThat(ClientWatches.data(zk(poller), root()))
                .as("%s", ClientWatches.dataByPath(zk(poller)))
                .isZero();
    }

    @Test
    void semaphoreTryAcquire_shortWaitsOnAFullSemaphore_leaveNoWatchBehind() throws Exception {
        Poller poller = poller();
        Lease held = client().semaphore("sem", 1).acquire(1);

        int polls = poll(
                poller, "sem", (wait) -> poller.client().semaphore("sem", 1).tryAcquire(1, wait));

        assertThat(polls).isGreaterThanOrEqualTo(POLLS / 10);
        await().atMost(Timing.scale(Duration.ofSeconds(5)))
                .untilAsserted(() -> assertThat(ClientWatches.children(zk(poller), root()))
                        .as("child watchers left in the client after %d polls", polls)
                        .isLessThanOrEqualTo(BOUND));
        assertThat(children("sem")).hasSize(1);
        held.close();
        try (Lease mine = poller.client()
                .semaphore("sem", 1)
                .tryAcquire(1, Timing.scale(Duration.ofSeconds(5)))
                .orElseThrow()) {
            assertThat(mine.isValid()).isTrue();
        }
    }

    /** One attempt with the given wait; empty when it timed out. */
    private interface Attempt {
        Optional<Lease> tryAcquire(Duration wait) throws InterruptedException;
    }

    /**
     * Polls up to {@link #POLLS} times (bounded by 60 s): mostly 1 ms waits, as in the report, and
     * every tenth a 20 ms wait, which surely sets its watch before it times out. Every poll must
     * time out (the lock is held elsewhere). Returns how many polls ran.
     */
    private int poll(Poller poller, String lock, Attempt attempt) throws InterruptedException {
        long end = System.nanoTime() + Timing.scale(Duration.ofSeconds(60)).toNanos();
        int polls = 0;
        while (polls < POLLS && System.nanoTime() - end < 0) {
            Duration wait = polls % 10 == 9 ? Duration.ofMillis(20) : Duration.ofMillis(1);
            assertThat(attempt.tryAcquire(wait))
                    .as("poll %d on a held lock", polls)
                    .isEmpty();
            polls++;
        }
        return polls;
    }

    /** Where this test's locks live; Curator watches {@code /zookeeper/config} for itself. */
    private String root() {
        return "/" + namespace + "/";
    }

    private static ZooKeeper zk(Poller poller) {
        return poller.backend().zk();
    }
}
