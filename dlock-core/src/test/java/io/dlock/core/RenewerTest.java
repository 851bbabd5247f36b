package io.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.LockOptions;
import io.dlock.Ticker;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Lease renewal over {@link InMemoryBackend} with grants that expire. Validity is judged on a fake
 * ticker that the test moves by hand; the renewer's tick runs on real time, so each step waits until
 * the renewer has acted on the new reading before moving on.
 */
class RenewerTest {
    private static final Duration LEASE = Duration.ofMillis(600);
    private static final long STEP = TimeUnit.MILLISECONDS.toNanos(50);

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final Ticker ticker = now::get;
    private InMemoryBackend.Server server;
    private InMemoryBackend backend;
    private LockClient client;

    @BeforeEach
    void setUp() {
        server = new InMemoryBackend.Server();
        server.grantLifetime(ticker, LEASE);
    }

    private LockClient open(boolean renewal) {
        backend = server.connect();
        client = LockEngine.newClient(
                backend,
                LockOptions.builder()
                        .ticker(ticker)
                        .leaseTime(LEASE)
                        .renewal(renewal)
                        .callbackThreads(1)
                        .build());
        return client;
    }

    @AfterEach
    void tearDown() {
        if (client != null) {
            client.close();
        }
    }

    private static ConditionFactory eventually() {
        return await().atMost(Duration.ofSeconds(5)).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(2));
    }

    /** Asserts that {@code condition} stays true for {@code period} (many renewer ticks). */
    private static void holdsFor(Duration period, java.util.concurrent.Callable<Boolean> condition) {
        await().during(period)
                .atMost(period.plusSeconds(5))
                .pollInterval(Duration.ofMillis(5))
                .until(condition);
    }

    private static long validUntil(Lease lease) {
        return ((EngineLease) lease).acquisition().grant().validUntilNanos();
    }

    /** Moves the fake clock one step, then waits until a due renewal has landed. */
    private void step(Lease lease) {
        now.addAndGet(STEP);
        // Renewals are due every LEASE/3 = 200 ms, so once caught up at least 600-200-50 ms remain.
        eventually().until(() -> validUntil(lease) - now.get() >= TimeUnit.MILLISECONDS.toNanos(350));
    }

    @Test
    void renewalKeepsTheLeaseForThreeLeaseTimes() throws Exception {
        Lease lease = open(true).lock("job").acquire();
        long firstValidity = validUntil(lease);
        for (int i = 0; i < 3 * 600 / 50; i++) {
            step(lease);
            assertThat(lease.isValid()).as("valid after %d ms", (i + 1) * 50).isTrue();
        }
        assertThat(now.get()).isGreaterThan(firstValidity);
        // Due every 200 ms of fake time; the clock moves in 50 ms steps without waiting for a due
        // renewal until validity falls below 350 ms, so each lands 200-300 ms after the last.
        assertThat(server.renewals.get()).isBetween(6, 10);
        lease.close();
        assertThat(backend.queue("job")).isEmpty();
    }

    @Test
    void renewalThatFindsTheTokenGoneLosesTheLeaseOnce() throws Exception {
        Lease lease = open(true).lock("job").acquire();
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        lease.onLost(lost::add);
        backend.expire(((EngineLease) lease).acquisition().entry()); // the server dropped the key
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(250)); // renewal due
        eventually().until(() -> lost.size() == 1);
        assertThat(lease.isValid()).isFalse();
        assertThat(lost.get(0))
                .hasMessageContaining("renewal found the lock gone")
                .hasMessageContaining("fencing token " + lease.fencingToken() + ":");
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(250));
        holdsFor(Duration.ofMillis(100), () -> lost.size() == 1); // several ticks: no second run
        lease.close();
    }

    @Test
    void unreachableServerLosesTheLeaseBeforeItRunsOut() throws Exception {
        Lease lease = open(true).lock("job").acquire();
        long[] lostAt = {0};
        long[] validUntilAtLoss = {0};
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        lease.onLost(e -> {
            lostAt[0] = now.get();
            validUntilAtLoss[0] = validUntil(lease);
            lost.add(e);
        });
        backend.failRenewals(true);
        long deadline = validUntil(lease);
        now.set(deadline - TimeUnit.MILLISECONDS.toNanos(100)); // renewals due and failing
        holdsFor(Duration.ofMillis(150), () -> lostAt[0] == 0); // 100 ms of validity left: not lost yet
        assertThat(lease.isValid()).isTrue();
        now.set(deadline - TimeUnit.MILLISECONDS.toNanos(30)); // less than two ticks left
        eventually().until(() -> lostAt[0] != 0);
        assertThat(lostAt[0]).as("onLost fires before the grant runs out").isLessThan(validUntilAtLoss[0]);
        // The last renewal's failure is kept (in the acquisition's side object) and reported as the cause.
        assertThat(lost.get(0).getCause()).hasMessageContaining("renewal refused (test)");
        assertThat(lease.isValid()).isFalse();
        assertThat(server.renewals.get()).isZero();
        backend.failRenewals(false);
        lease.close();
        assertThat(backend.queue("job"))
                .as("closing a lost lease removes what is left")
                .isEmpty();
        // The lock is usable again.
        try (Lease again = client.lock("job").acquire()) {
            assertThat(again.fencingToken()).isGreaterThan(lease.fencingToken());
        }
    }

    @Test
    void renewalThatConfirmsAShorterLeaseReplacesALongerGrant() throws Exception {
        // A grant made on this client's behalf with another client's longer lease (a hand-over in the
        // releasing request): from the first renewal on, the server keeps it for this client's lease.
        server.grantLifetime(ticker, Duration.ofSeconds(10));
        Lease lease = open(true).lock("job").acquire();
        assertThat(validUntil(lease) - now.get()).isGreaterThan(TimeUnit.SECONDS.toNanos(9));
        server.grantLifetime(ticker, LEASE);
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(250)); // renewal due
        eventually().until(() -> server.renewals.get() >= 1);
        eventually().until(() -> validUntil(lease) - now.get() <= LEASE.toNanos());
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        lease.onLost(lost::add);
        backend.failRenewals(true); // cut off: the server's copy runs out one lease after the renewal
        now.addAndGet(LEASE.toNanos());
        eventually().until(() -> lost.size() == 1);
        assertThat(lease.isValid()).isFalse();
        backend.failRenewals(false);
        lease.close();
    }

    @Test
    void withRenewalOffTheGrantSimplyExpires() throws Exception {
        Lease lease = open(false).lock("job").acquire();
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        lease.onLost(lost::add);
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(400));
        holdsFor(Duration.ofMillis(100), () -> lease.isValid() && lost.isEmpty());
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(200));
        eventually().until(() -> lost.size() == 1);
        assertThat(lease.isValid()).isFalse();
        assertThat(lost.get(0)).hasMessageContaining("renewal is off");
        assertThat(server.renewals.get()).isZero();
        lease.close();
    }

    @Test
    void releasedLeasesAreNoLongerRenewed() throws Exception {
        Lease lease = open(true).lock("job").acquire();
        step(lease);
        lease.close();
        assertThat(((EngineClient) client).renewer.tracked()).isZero();
        int before = server.renewals.get();
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(500));
        holdsFor(Duration.ofMillis(100), () -> server.renewals.get() == before);
    }

    @Test
    void sessionBoundGrantsAreNotTracked() throws Exception {
        server.grantLifetime(null, null);
        try (Lease lease = open(true).lock("job").acquire()) {
            assertThat(((EngineClient) client).renewer.tracked()).isZero();
            now.addAndGet(TimeUnit.SECONDS.toNanos(5));
            assertThat(lease.isValid()).isTrue();
        }
    }

    @Test
    void manyLeasesAreRenewedInOneTick() throws Exception {
        LockClient c = open(true);
        List<Lease> leases = new java.util.ArrayList<>();
        for (int i = 0; i < 50; i++) {
            leases.add(c.lock("many-" + i).acquire());
        }
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(250));
        eventually().until(() -> server.renewals.get() == 50);
        for (Lease l : leases) {
            assertThat(validUntil(l) - now.get()).isGreaterThan(TimeUnit.MILLISECONDS.toNanos(500));
            l.close();
        }
    }
}
