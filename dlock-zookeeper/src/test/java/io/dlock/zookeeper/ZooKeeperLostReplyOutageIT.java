package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.testkit.FaultProxy;
import io.dlock.testkit.FaultProxy.Direction;
import io.dlock.testkit.Timing;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A create whose reply is lost, followed by an outage longer than twice the connect timeout while
 * the session survives (issue 19, item 2): the acquire fails or times out, but the node it made
 * must not stay behind, owned by a live session, blocking the lock for every client until this
 * client closes.
 *
 * <p>The outage is a server stop and restart on the same data: reconnects are refused at once, and
 * the session survives (it is restored from the data directory), as in a rolling restart.
 */
class ZooKeeperLostReplyOutageIT extends ZooKeeperTestSupport {

    /** Longer than twice the connect timeout (1 s), far shorter than the session (9 s). */
    private static final Duration OUTAGE = Duration.ofSeconds(3);

    private FaultProxy proxy;

    @AfterEach
    void closeProxy() {
        if (proxy != null) {
            proxy.close();
        }
    }

    /** A client through a new fault proxy, 9 s session, 1 s connect timeout, plus {@code extra}. */
    private LockClient proxiedClient(String extra) {
        proxy = FaultProxy.start(server.port());
        return track(LockClient.connect("zookeeper://" + proxy.connectString() + "/" + namespace
                + "?sessionTimeout=9s&connectTimeout=1s" + extra));
    }

    /** A direct client whose lease outlives the outage (suspension allowed: 30 s / 6 = 5 s). */
    private LockClient steadyClient() {
        return client("sessionTimeout=30s&connectTimeout=20s");
    }

    @Test
    void acquire_replyLostThenOutage_enqueueGivesUpAndItsNodeIsRemovedOnceReconnected() throws Exception {
        LockClient client = proxiedClient("&retryMaxRetries=1"); // the enqueue gives up during the outage
        LockClient holder = steadyClient();
        LockClient third = steadyClient();
        Lease held = holder.lock("orphan").acquire(); // keeps the parent in place; our node waits behind it
        String heldNode = children("orphan").get(0);

        proxy.blackhole(Direction.DOWNSTREAM); // the create reaches the server, its reply does not come back
        CompletableFuture<Lease> acquiring =
                inThread(() -> client.lock("orphan").acquire());
        String created = awaitSecondNode("orphan", heldNode);
        outage();

        assertThat(acquiring)
                .failsWithin(Timing.scale(Duration.ofSeconds(30)))
                .withThrowableOfType(ExecutionException.class)
                .withCauseInstanceOf(LockBackendException.class);
        held.close();

        // Another client gets the lock while the first one is still open; nothing of its
        // acquisition is left.
        Optional<Lease> next = third.lock("orphan").tryAcquire(Timing.scale(Duration.ofSeconds(15)));
        assertThat(next).as("the lock is blocked by the lost create's node").isPresent();
        assertThat(children("orphan")).doesNotContain(created, heldNode).hasSize(1);
        next.get().close();
        await().atMost(Timing.scale(Duration.ofSeconds(5)))
                .until(() -> children("orphan").isEmpty());
        assertThat(client.lock("orphan").tryAcquire(Timing.scale(Duration.ofSeconds(5))))
                .isPresent()
                .get()
                .satisfies(Lease::close); // the first client itself is still usable
    }

    @Test
    void tryAcquire_replyLostThenOutage_failsAsAnOutageAndItsNodeIsRemovedOnceReconnected() throws Exception {
        LockClient client = proxiedClient(""); // default retries: the enqueue outlasts the caller's wait
        LockClient holder = steadyClient();
        LockClient third = steadyClient();
        Lease held = holder.lock("orphan").acquire();
        String heldNode = children("orphan").get(0);

        proxy.blackhole(Direction.DOWNSTREAM);
        CompletableFuture<Optional<Lease>> trying =
                inThread(() -> client.lock("orphan").tryAcquire(Duration.ofMillis(500)));
        String created = awaitSecondNode("orphan", heldNode);
        outage();

        // Unreachable is not busy: the unanswered create is an outage, not "someone else holds it".
        assertThatThrownBy(() -> trying.get(Timing.scale(Duration.ofSeconds(30)).toMillis(), TimeUnit.MILLISECONDS))
                .isInstanceOf(java.util.concurrent.ExecutionException.class)
                .cause()
                .isInstanceOf(io.dlock.LockBackendException.class);
        held.close();

        Optional<Lease> next = third.lock("orphan").tryAcquire(Timing.scale(Duration.ofSeconds(15)));
        assertThat(next).as("the lock is blocked by the lost create's node").isPresent();
        assertThat(children("orphan")).doesNotContain(created, heldNode).hasSize(1);
        next.get().close();
        await().atMost(Timing.scale(Duration.ofSeconds(5)))
                .until(() -> children("orphan").isEmpty());
    }

    /** Runs a blocking call on a thread of its own. */
    private static <T> CompletableFuture<T> inThread(Callable<T> call) {
        CompletableFuture<T> result = new CompletableFuture<>();
        Thread t = new Thread(
                () -> {
                    try {
                        result.complete(call.call());
                    } catch (Throwable e) {
                        result.completeExceptionally(e);
                    }
                },
                "lost-reply-acquirer");
        t.setDaemon(true);
        t.start();
        return result;
    }

    /** Waits for the create to land on the server; returns the new node's name. */
    private String awaitSecondNode(String lock, String heldNode) {
        await().atMost(Timing.scale(Duration.ofSeconds(5)))
                .until(() -> children(lock).size() == 2);
        List<String> now = children(lock);
        return now.stream().filter(c -> !c.equals(heldNode)).findFirst().orElseThrow();
    }

    /**
     * The server stops (every connection closes, so the create fails with a connection loss and
     * every reconnect is refused) and comes back on the same data after {@link #OUTAGE}: sessions
     * survive.
     */
    private void outage() throws InterruptedException {
        server.stop();
        proxy.pass(); // new connections reach the (stopped) server: refused at once
        Thread.sleep(OUTAGE.toMillis()); // the fault's length, not a wait for a condition
        server.restart();
    }
}
