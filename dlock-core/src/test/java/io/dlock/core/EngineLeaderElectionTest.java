package io.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.LeaderElection;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.RetryPolicy;
import io.dlock.Ticker;
import io.dlock.spi.ConnectionState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The election engine over {@link InMemoryBackend}: terms, succession, listeners, rejoin, retry. */
class EngineLeaderElectionTest {
    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final Ticker ticker = now::get;
    private final List<LockClient> clients = new ArrayList<>();

    private InMemoryBackend.Server server;

    @BeforeEach
    void setUp() {
        server = new InMemoryBackend.Server();
    }

    @AfterEach
    void tearDown() {
        clients.forEach(LockClient::close);
    }

    private LockClient open(InMemoryBackend b) {
        LockClient c = LockEngine.newClient(
                b,
                LockOptions.builder()
                        .ticker(ticker)
                        .callbackThreads(1)
                        .retryPolicy(RetryPolicy.exponentialBackoff(Duration.ofMillis(10), Duration.ofMillis(40), 3))
                        .build());
        clients.add(c);
        return c;
    }

    private static ConditionFactory eventually() {
        return await().atMost(Duration.ofSeconds(5)).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(5));
    }

    /** Records a candidate's listener calls as "E<term>" and "R<term>", in order. */
    private static List<String> record(LeaderElection e) {
        List<String> events = new CopyOnWriteArrayList<>();
        e.onElected(t -> events.add("E" + t.fencingToken())).onRevoked(t -> events.add("R" + t.fencingToken()));
        return events;
    }

    @Test
    void start_twoCandidates_oneLeadsAndTheOtherQueues() throws Exception {
        LeaderElection a = open(server.connect()).leaderElection("jobs");
        LeaderElection b = open(server.connect()).leaderElection("jobs");
        a.start();
        Lease term = a.awaitLeadership(Duration.ofSeconds(5)).orElseThrow();
        b.start();
        eventually().until(() -> server.queue("election:jobs").size() == 2);
        assertThat(b.leadership()).isEmpty();
        assertThat(term.lockName()).isEqualTo("election:jobs");
        assertThat(term.isValid()).isTrue();
        assertThat(server.queue("jobs")).isEmpty();
    }

    @Test
    void closeTerm_nextCandidateElectedAndOldOneRejoinsAtTheBack() throws Exception {
        LeaderElection a = open(server.connect()).leaderElection("jobs");
        LeaderElection b = open(server.connect()).leaderElection("jobs");
        List<String> aEvents = record(a);
        List<String> bEvents = record(b);
        a.start();
        Lease first = a.awaitLeadership(Duration.ofSeconds(5)).orElseThrow();
        b.start();
        eventually().until(() -> server.queue("election:jobs").size() == 2);
        first.close();
        Lease second = b.awaitLeadership(Duration.ofSeconds(5)).orElseThrow();
        assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
        assertThat(first.isValid()).isFalse();
        eventually().until(() -> server.queue("election:jobs").size() == 2); // a is back, behind b
        assertThat(a.leadership()).isEmpty();
        second.close();
        Lease third = a.awaitLeadership(Duration.ofSeconds(5)).orElseThrow();
        assertThat(third.fencingToken()).isGreaterThan(second.fencingToken());
        eventually().until(() -> aEvents.size() == 3 && bEvents.size() == 2);
        assertThat(aEvents)
                .containsExactly("E" + first.fencingToken(), "R" + first.fencingToken(), "E" + third.fencingToken());
        assertThat(bEvents).containsExactly("E" + second.fencingToken(), "R" + second.fencingToken());
    }

    @Test
    void close_leader_revokedOnceAndNextElected() throws Exception {
        LeaderElection a = open(server.connect()).leaderElection("jobs");
        LeaderElection b = open(server.connect()).leaderElection("jobs");
        List<String> aEvents = record(a);
        a.start();
        Lease term = a.awaitLeadership(Duration.ofSeconds(5)).orElseThrow();
        b.start();
        a.close();
        a.close();
        assertThat(term.isValid()).isFalse();
        assertThat(b.awaitLeadership(Duration.ofSeconds(5))).isPresent();
        eventually().until(() -> aEvents.size() == 2);
        assertThat(aEvents).containsExactly("E" + term.fencingToken(), "R" + term.fencingToken());
        assertThat(server.queue("election:jobs")).hasSize(1);
        assertThatThrownBy(a::start).isInstanceOf(IllegalStateException.class);
        assertThat(a.awaitLeadership(Duration.ofSeconds(1))).isEmpty();
    }

    @Test
    void close_queuedCandidate_leavesNoEntry() throws Exception {
        LeaderElection a = open(server.connect()).leaderElection("jobs").start();
        a.awaitLeadership(Duration.ofSeconds(5)).orElseThrow();
        LeaderElection b = open(server.connect()).leaderElection("jobs").start();
        eventually().until(() -> server.queue("election:jobs").size() == 2);
        b.close();
        assertThat(server.queue("election:jobs")).hasSize(1);
    }

    @Test
    void sessionLost_termRevokedThenCandidateRejoins() throws Exception {
        InMemoryBackend conn = server.connect();
        LeaderElection a = open(conn).leaderElection("jobs");
        List<String> events = record(a);
        a.start();
        Lease first = a.awaitLeadership(Duration.ofSeconds(5)).orElseThrow();
        conn.emit(ConnectionState.LOST);
        assertThat(first.isValid()).isFalse();
        // Alone in the election: its lost entry is removed and it is elected again with a new term.
        eventually().until(() -> a.leadership().isPresent());
        Lease second = a.leadership().orElseThrow();
        assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
        eventually().until(() -> events.size() == 3);
        assertThat(events)
                .containsExactly("E" + first.fencingToken(), "R" + first.fencingToken(), "E" + second.fencingToken());
    }

    @Test
    void start_enqueueFails_retriesWithBackOffUntilElected() throws Exception {
        InMemoryBackend conn = server.connect();
        LeaderElection a = open(conn).leaderElection("jobs");
        conn.failNextEnqueue(InMemoryBackend.FailMode.BEFORE_APPLY);
        a.start();
        assertThat(a.awaitLeadership(Duration.ofSeconds(5))).isPresent();
        assertThat(server.queue("election:jobs")).hasSize(1);
    }

    @Test
    void closeTerm_backendWithoutQueue_pausesBeforeCompetingAgain() throws Exception {
        java.util.Set<io.dlock.Capability> unfair = java.util.EnumSet.copyOf(InMemoryBackend.DEFAULT_CAPABILITIES);
        unfair.remove(io.dlock.Capability.FAIR);
        LeaderElection a = open(server.connect(unfair)).leaderElection("jobs").start();
        Lease first = a.awaitLeadership(Duration.ofSeconds(5)).orElseThrow();
        long gaveUp = System.nanoTime();
        first.close();
        Lease second = a.awaitLeadership(Duration.ofSeconds(5)).orElseThrow();
        assertThat(System.nanoTime() - gaveUp)
                .isGreaterThanOrEqualTo(EngineLeaderElection.UNFAIR_REJOIN_PAUSE.toNanos());
        assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
    }

    @Test
    void backoff_doublesUpToMax() {
        RetryPolicy p = RetryPolicy.exponentialBackoff(Duration.ofMillis(100), Duration.ofSeconds(5), 10);
        assertThat(EngineLeaderElection.backoffNanos(p, 1)).isEqualTo(TimeUnit.MILLISECONDS.toNanos(100));
        assertThat(EngineLeaderElection.backoffNanos(p, 2)).isEqualTo(TimeUnit.MILLISECONDS.toNanos(200));
        assertThat(EngineLeaderElection.backoffNanos(p, 6)).isEqualTo(TimeUnit.MILLISECONDS.toNanos(3200));
        assertThat(EngineLeaderElection.backoffNanos(p, 7)).isEqualTo(TimeUnit.SECONDS.toNanos(5));
        assertThat(EngineLeaderElection.backoffNanos(p, 1000)).isEqualTo(TimeUnit.SECONDS.toNanos(5));
    }

    @Test
    void clientClose_leaderRevokedOnce() throws Exception {
        LockClient c = open(server.connect());
        LeaderElection a = c.leaderElection("jobs");
        CountDownLatch revoked = new CountDownLatch(1);
        List<String> events = record(a);
        a.onRevoked(t -> revoked.countDown());
        a.start();
        Lease term = a.awaitLeadership(Duration.ofSeconds(5)).orElseThrow();
        c.close();
        assertThat(revoked.await(5, TimeUnit.SECONDS)).isTrue();
        assertThat(term.isValid()).isFalse();
        assertThat(events).containsExactly("E" + term.fencingToken(), "R" + term.fencingToken());
        assertThat(server.queue("election:jobs")).isEmpty();
    }

    @Test
    void term_notReenterableByAnotherThreadOfTheSameClient() throws Exception {
        LockClient c = open(server.connect());
        LeaderElection a = c.leaderElection("jobs").start();
        a.awaitLeadership(Duration.ofSeconds(5)).orElseThrow();
        assertThat(c.lock("election:jobs").tryAcquire(Duration.ZERO)).isEmpty();
        Optional<Lease> other = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                    try {
                        return c.lock("election:jobs").tryAcquire(Duration.ZERO);
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                })
                .get(5, TimeUnit.SECONDS);
        assertThat(other).isEmpty();
    }

    @Test
    void badInput_illegalArgumentAndNothingChanged() throws Exception {
        LockClient c = open(server.connect());
        assertThatThrownBy(() -> c.leaderElection("bad/name")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> c.leaderElection(null)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> c.leaderElection("x".repeat(192)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("191");
        assertThat(c.leaderElection("x".repeat(191)).name()).hasSize(191);
        LeaderElection e = c.leaderElection("jobs");
        assertThatThrownBy(() -> e.onElected(null)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> e.onRevoked(null)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> e.awaitLeadership(Duration.ofMillis(-1))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> e.awaitLeadership(null)).isInstanceOf(IllegalArgumentException.class);
        assertThat(server.totalEntries()).isZero();
        e.start();
        assertThat(e.awaitLeadership(Duration.ofSeconds(5))).isPresent();
    }

    @Test
    void listenerThrows_othersStillRunAndElectionGoesOn() throws Exception {
        LeaderElection a = open(server.connect()).leaderElection("jobs");
        a.onElected(t -> {
            throw new AssertionError("boom");
        });
        List<String> events = record(a);
        a.start();
        Lease term = a.awaitLeadership(Duration.ofSeconds(5)).orElseThrow();
        eventually().until(() -> events.size() == 1);
        term.close();
        eventually().until(() -> events.size() == 3);
        assertThat(events.get(2)).startsWith("E");
    }
}
