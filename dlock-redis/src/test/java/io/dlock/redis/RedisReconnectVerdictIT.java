package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * After a reconnect the client checks its grants one by one: a grant that vanished is lost by
 * itself, and the client's other leases stay valid.
 */
class RedisReconnectVerdictIT extends RedisTestSupport {

    /** Drops every command connection of dlock's clients (the test's own is skipped). */
    private static void bounceConnections() {
        assertThat((Long) server.command("CLIENT", "KILL", "TYPE", "normal")).isPositive();
    }

    @Test
    void reconnect_oneGrantDeletedBehindItsBack_onlyThatLeaseIsLost() throws Exception {
        LockClient client = client("leaseTime=6s");
        List<LockLostException> lostA = new CopyOnWriteArrayList<>();
        List<LockLostException> lostB = new CopyOnWriteArrayList<>();
        Lease a = client.lock("a").acquire();
        Lease b = client.lock("b").acquire();
        a.onLost(lostA::add);
        b.onLost(lostB::add);

        // a's grant vanishes (the lone holder's key), then the connection drops before a's next renewal.
        assertThat(server.command("DEL", prefix + ":{a}:x:s")).isEqualTo(1L);
        bounceConnections();

        // a turns lost by itself: its next renewal finds the grant gone (within leaseTime / 3 = 2 s).
        await().atMost(scaled(5)).until(() -> lostA.size() == 1);
        assertThat(a.isValid()).isFalse();
        assertThat(lostA.get(0)).hasMessageContaining("'a'");
        // b, intact on the server, is not touched by a's loss nor by the reconnect.
        await().during(Duration.ofSeconds(3)).atMost(scaled(5)).until(() -> b.isValid() && lostB.isEmpty());
        assertThat(client("").lock("b").tryAcquire(Duration.ZERO)).isEmpty(); // still held on the server

        a.close();
        b.close();
        assertThat(lostB).isEmpty();
    }

    /**
     * A lease that lapsed (renewal off) is lost to the engine but stays open; its grant has expired
     * on the server. A reconnect must not check it, so the client's newer lease is left alone and
     * runs out only at its own time.
     */
    @Test
    void reconnect_lapsedButUnclosedLease_isNotCheckedAndOtherLeasesStayValid() throws Exception {
        LockClient client = client("leaseTime=3s&renewal=false");
        Lease lapsed = client.lock("lapsed").acquire();
        await().atMost(scaled(6)).until(() -> !lapsed.isValid());
        // Expired on the server too: its next acquirer is granted.
        await().atMost(scaled(5)).until(() -> keys().stream().noneMatch(k -> k.contains("{lapsed}")));

        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease fresh = client.lock("fresh").acquire();
        long acquiredAt = System.nanoTime();
        fresh.onLost(lost::add);
        bounceConnections();
        await().during(Duration.ofMillis(1500)).atMost(scaled(3)).until(() -> fresh.isValid() && lost.isEmpty());
        // Lost only when its own lease runs out (renewal off), not at the reconnect.
        await().atMost(scaled(5)).until(() -> lost.size() == 1);
        assertThat(Duration.ofNanos(System.nanoTime() - acquiredAt)).isGreaterThan(Duration.ofMillis(2500));
        assertThat(lost.get(0)).hasMessageContaining("ran out");

        lapsed.close();
        fresh.close();
    }
}
