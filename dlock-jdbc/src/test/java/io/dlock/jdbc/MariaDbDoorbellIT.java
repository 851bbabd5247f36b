package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.Timing;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * MariaDB's doorbell ({@link MariaDbDoorbell}): a hand-off between clients wakes the next waiter in
 * about a round trip, not at its poll; and with the bells cut off it still hands off, by polling.
 */
class MariaDbDoorbellIT extends MariaDbTestSupport {

    private static final Duration HOLD = Duration.ofMillis(150);

    /**
     * Two clients taking turns on one lock, while {@code meanwhile} runs; returns each hand-off's time
     * from release to the other's grant (ms).
     */
    private List<Double> pingPong(LockClient a, LockClient b, int turnsEach, AtomicInteger inside, Runnable meanwhile)
            throws Exception {
        List<Double> gaps = Collections.synchronizedList(new ArrayList<>());
        AtomicLong releasedAt = new AtomicLong();
        AtomicInteger lastHolder = new AtomicInteger(-1);
        AtomicLong lastToken = new AtomicLong();
        AtomicBoolean tokensRose = new AtomicBoolean(true);
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            List<Future<?>> runs = new ArrayList<>();
            runs.add(pool.submit(meanwhile));
            LockClient[] clients = {a, b};
            for (int id = 0; id < 2; id++) {
                int me = id;
                runs.add(pool.submit(() -> {
                    for (int i = 0; i < turnsEach; i++) {
                        try (Lease lease = clients[me].lock("bell").acquire()) {
                            long now = System.nanoTime();
                            if (inside.incrementAndGet() != 1) {
                                throw new AssertionError("two holders at once");
                            }
                            if (lease.fencingToken() <= lastToken.getAndSet(lease.fencingToken())) {
                                tokensRose.set(false);
                            }
                            if (lastHolder.getAndSet(me) == 1 - me) {
                                gaps.add((now - releasedAt.get()) / 1e6);
                            }
                            Thread.sleep(HOLD.toMillis());
                            inside.decrementAndGet();
                            releasedAt.set(System.nanoTime());
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : runs) {
                f.get(2, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(tokensRose).as("fencing tokens rose with every grant").isTrue();
        return gaps;
    }

    private static double median(List<Double> xs) {
        List<Double> sorted = new ArrayList<>(xs);
        Collections.sort(sorted);
        return sorted.get(sorted.size() / 2);
    }

    @Test
    void handOff_betweenClients_wakesTheNextWaiterWithinMilliseconds() throws Exception {
        LockClient a = client();
        LockClient b = client();
        List<Double> gaps = pingPong(a, b, 10, new AtomicInteger(), () -> {});
        // The first hand-off of a busy period comes from a holder granted at its first try, which has
        // no bell: its successor polls. From then on every holder waited, and rings.
        List<Double> rung = gaps.subList(1, gaps.size());
        // While a waiter polls, its poll backs off to 100 ms during a 150 ms hold: the median hand-off
        // by poll is tens of milliseconds (about 50). Rung, it is about three round trips (2 to 5 ms
        // measured on a loaded 2-core machine).
        assertThat(rung).hasSizeGreaterThanOrEqualTo(15);
        assertThat(median(rung))
                .as("median hand-off (ms) of %s", rung)
                .isLessThan(Timing.scale(Duration.ofMillis(20)).toMillis());
    }

    @Test
    void handOff_bellConnectionsKilled_stillHandsOffByPolling() throws Exception {
        LockClient a = client();
        LockClient b = client();
        AtomicInteger killed = new AtomicInteger();
        List<Double> gaps = pingPong(a, b, 8, new AtomicInteger(), () -> killed.addAndGet(killBells()));
        assertThat(killed.get()).as("bell sessions killed").isPositive();
        assertThat(gaps).hasSizeGreaterThanOrEqualTo(14);
        // Each by the bell or else by the poll (at most 100 ms late), never lost.
        assertThat(Collections.max(gaps))
                .as("slowest hand-off (ms) of %s", gaps)
                .isLessThan(Timing.scale(Duration.ofMillis(1_000)).toMillis());
    }

    /** Kills every session blocked in a doorbell's GET_LOCK, waiting for one to appear first; returns how many. */
    private int killBells() {
        long deadline = System.nanoTime() + Timing.scale(Duration.ofSeconds(5)).toNanos();
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            while (System.nanoTime() < deadline) {
                List<Long> ids = new ArrayList<>();
                try (ResultSet rs = s.executeQuery("SELECT ID FROM information_schema.PROCESSLIST"
                        + " WHERE INFO LIKE 'SELECT GET_LOCK(%' AND ID <> CONNECTION_ID()")) {
                    while (rs.next()) {
                        ids.add(rs.getLong(1));
                    }
                }
                for (long id : ids) {
                    s.execute("KILL CONNECTION " + id);
                }
                if (!ids.isEmpty()) {
                    return ids.size();
                }
                Thread.onSpinWait();
            }
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        return 0;
    }
}
