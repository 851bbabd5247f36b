package io.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockMetricNames;
import io.dlock.LockOptions;
import io.dlock.Ticker;
import io.dlock.spi.ConnectionState;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The Micrometer meters of {@link LockMetricNames}, recorded by the engine over {@link InMemoryBackend}. */
class MetricsTest {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final Ticker ticker = now::get;
    private final MeterRegistry registry = new SimpleMeterRegistry();
    private final InMemoryBackend.Server server = new InMemoryBackend.Server();
    private final List<LockClient> clients = new ArrayList<>();

    @AfterEach
    void tearDown() {
        clients.forEach(LockClient::close);
    }

    private LockClient open(InMemoryBackend backend, LockOptions.Builder options) {
        LockClient c = LockEngine.newClient(
                backend, options.ticker(ticker).metricsRegistry(registry).build());
        clients.add(c);
        return c;
    }

    private LockClient open() {
        return open(server.connect(), LockOptions.builder());
    }

    private long acquires(String outcome) {
        var timer = registry.find(LockMetricNames.ACQUIRE)
                .tag("kind", "lock")
                .tag("outcome", outcome)
                .timer();
        return timer == null ? 0 : timer.count();
    }

    private double counter(String name, String tag, String value) {
        var counter = registry.find(name).tag(tag, value).counter();
        return counter == null ? 0 : counter.count();
    }

    private double gauge(String name) {
        return registry.find(name).tag("backend", "inmemory").gauges().stream()
                .mapToDouble(g -> g.value())
                .sum();
    }

    @Test
    void acquire_grantedAndTimedOut_recordedByOutcome() throws Exception {
        LockClient c = open();
        LockClient other = open();
        Lease lease = c.lock("x").acquire();
        assertThat(other.lock("x").tryAcquire(Duration.ofMillis(30))).isEmpty();
        // Recorded as the outcome completes, which may be just after the caller woke up.
        await().atMost(Duration.ofSeconds(5)).until(() -> acquires("acquired") == 1 && acquires("timeout") == 1);
        assertThat(acquires("error")).isZero();
        assertThat(registry.find(LockMetricNames.ACQUIRE)
                        .tag("outcome", "acquired")
                        .timer()
                        .getId()
                        .getTag(LockMetricNames.TAG_LOCK))
                .as("no lock-name tag unless asked")
                .isNull();
        lease.close();
    }

    @Test
    void heldAndWaitingGauges_followTheClient() throws Exception {
        LockClient c = open();
        LockClient other = open(server.connect(), LockOptions.builder());
        Lease lease = c.lock("x").acquire();
        CompletableFuture<Lease> waiting = other.lock("x").acquireAsync(Duration.ofMinutes(1));
        await().atMost(Duration.ofSeconds(5)).until(() -> gauge(LockMetricNames.WAITING) == 1);
        assertThat(gauge(LockMetricNames.HELD)).isEqualTo(1);
        lease.close();
        waiting.get(5, TimeUnit.SECONDS).close();
        assertThat(gauge(LockMetricNames.HELD)).isZero();
        assertThat(gauge(LockMetricNames.WAITING)).isZero();

        other.close();
        assertThat(registry.find(LockMetricNames.HELD).gauges())
                .as("a closed client's gauges are removed")
                .hasSize(1);
    }

    @Test
    void leaseLost_countedByCause() throws Exception {
        InMemoryBackend backend = server.connect();
        LockClient c = open(backend, LockOptions.builder());
        c.lock("x").acquire();
        backend.emit(ConnectionState.LOST);
        assertThat(counter(LockMetricNames.LEASE_LOST, "cause", "session")).isEqualTo(1);
        assertThat(counter(LockMetricNames.LEASE_LOST, "cause", "expired")).isZero();
    }

    @Test
    void localHandOffs_counted() throws Exception {
        LockClient c = open();
        Lease first = c.lock("x").acquire();
        CompletableFuture<Lease> second = c.lock("x").acquireAsync(Duration.ofMinutes(1));
        await().atMost(Duration.ofSeconds(5)).until(() -> gauge(LockMetricNames.WAITING) == 1);
        first.close();
        second.get(5, TimeUnit.SECONDS).close();
        assertThat(counter(LockMetricNames.LOCAL_HANDOFF, "backend", "inmemory"))
                .isEqualTo(1);
    }

    @Test
    void renewals_countedByOutcome() throws Exception {
        server.grantLifetime(ticker, Duration.ofMillis(600));
        InMemoryBackend backend = server.connect();
        LockClient c = open(backend, LockOptions.builder().leaseTime(Duration.ofMillis(600)));
        Lease lease = c.lock("x").acquire();
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(250)); // past a third of the lease: due
        await().atMost(Duration.ofSeconds(5)).until(() -> counter(LockMetricNames.RENEWAL, "outcome", "ok") >= 1);
        backend.failRenewals(true);
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(250));
        await().atMost(Duration.ofSeconds(5)).until(() -> counter(LockMetricNames.RENEWAL, "outcome", "failed") >= 1);
        assertThat(lease.isValid()).isTrue();
    }

    @Test
    void perLockName_tagsMetersWithTheName() throws Exception {
        LockClient c = open(server.connect(), LockOptions.builder().metricsPerLockName(true));
        c.lock("orders").acquire().close();
        await().atMost(Duration.ofSeconds(5))
                .until(() -> registry.find(LockMetricNames.ACQUIRE)
                                .tag("lock", "orders")
                                .tag("outcome", "acquired")
                                .timer()
                        != null);
        assertThat(registry.find(LockMetricNames.ACQUIRE)
                        .tag("lock", "orders")
                        .tag("outcome", "acquired")
                        .timer()
                        .count())
                .isEqualTo(1);
    }

    @Test
    void metricsRegistry_notAMeterRegistry_refusedAndTheBackendClosed() {
        InMemoryBackend backend = server.connect();
        LockOptions options =
                LockOptions.builder().metricsRegistry("not a registry").build();
        assertThatThrownBy(() -> LockEngine.newClient(backend, options))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("MeterRegistry")
                .hasMessageContaining("java.lang.String");
        assertThat(backend.isClosed()).isTrue();
    }

    @Test
    void leaderElection_gaugeTermsAndTermTimes_perElection() throws Exception {
        LockClient c = open();
        LockClient other = open();
        io.dlock.LeaderElection a = c.leaderElection("jobs").start();
        io.dlock.Lease first = a.awaitLeadership(Duration.ofSeconds(5)).orElseThrow();
        io.dlock.LeaderElection b = other.leaderElection("jobs").start();
        assertThat(leaderGauges("jobs")).containsExactlyInAnyOrder(1.0, 0.0);
        now.addAndGet(TimeUnit.SECONDS.toNanos(3));
        first.close(); // given up: b leads, a rejoins behind it
        b.awaitLeadership(Duration.ofSeconds(5)).orElseThrow();
        await().atMost(Duration.ofSeconds(5)).until(() -> terms("given-up") == 1);
        assertThat(terms("elected")).isEqualTo(2);
        assertThat(leaderGauges("jobs")).containsExactlyInAnyOrder(0.0, 1.0);
        var termTimer = registry.find(LockMetricNames.LEADER_TERM)
                .tag("election", "jobs")
                .timer();
        assertThat(termTimer).isNotNull();
        assertThat(termTimer.count()).isEqualTo(1);
        b.close();
        assertThat(terms("closed")).isEqualTo(1);
        a.close();
        assertThat(registry.find(LockMetricNames.LEADER).gauges()).isEmpty();
    }

    private List<Double> leaderGauges(String election) {
        return registry.find(LockMetricNames.LEADER).tag("election", election).gauges().stream()
                .map(g -> g.value())
                .toList();
    }

    private double terms(String event) {
        var counter =
                registry.find(LockMetricNames.LEADER_TERMS).tag("event", event).counter();
        return counter == null ? 0 : counter.count();
    }
}
