package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Capability;
import io.dlock.Leader;
import io.dlock.LeaderElection;
import io.dlock.Lease;
import io.dlock.LockClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * What every backend's leader election must do, through the public API against a real server: a
 * JUnit 5 test interface, the companion of {@link ExclusiveLockContract}. A backend's IT implements
 * it on top of its {@link LockFixture}; nothing else is needed. Measured hand-over times are printed
 * ({@code [election] ...}) for the record.
 */
public interface ElectionContract extends LockFixture {

    /** The lock name of election {@code election}: the engine's reserved namespace. */
    static String lockOf(String election) {
        return "election:" + election;
    }

    /** A candidate's listener calls in order, {@code E<term>} and {@code R<term>}, and how many ran at once. */
    final class Recorder {
        final List<String> events = new CopyOnWriteArrayList<>();
        final AtomicInteger running = new AtomicInteger();
        final AtomicInteger maxRunning = new AtomicInteger();

        LeaderElection attach(LeaderElection e) {
            return e.onElected(t -> record("E" + t.fencingToken(), t, true))
                    .onRevoked(t -> record("R" + t.fencingToken(), t, false));
        }

        private void record(String event, Lease term, boolean elected) {
            maxRunning.accumulateAndGet(running.incrementAndGet(), Math::max);
            try {
                // onElected sees a term that may be valid; onRevoked never sees a valid one.
                events.add(elected || !term.isValid() ? event : event + "-STILL-VALID");
                Thread.sleep(5); // long enough for an overlapping listener to be seen
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                running.decrementAndGet();
            }
        }
    }

    private static Duration scaled(long seconds) {
        return Timing.scale(Duration.ofSeconds(seconds));
    }

    private static Lease leaderWithin(LeaderElection e, Duration wait) throws InterruptedException {
        Optional<Lease> term = e.awaitLeadership(wait);
        assertThat(term).as("%s elected within %s", e, wait).isPresent();
        return term.get();
    }

    @Test
    default void start_threeClients_oneLeaderAndTermsIncreaseAcrossSuccessions() throws Exception {
        List<LeaderElection> candidates = new ArrayList<>();
        boolean fair = true;
        for (int i = 0; i < 3; i++) {
            LockClient client = newClient();
            fair &= client.capabilities().contains(Capability.FAIR);
            candidates.add(client.leaderElection("succession"));
        }
        try (LeadershipSampler sampler = LeadershipSampler.start(candidates)) {
            // Join one by one, so that the queue order is known: 0, 1, 2.
            for (int i = 0; i < 3; i++) {
                candidates.get(i).start();
                int queued = i + 1;
                await().atMost(scaled(10))
                        .until(() -> entries(lockOf("succession")).size() == queued);
            }
            leaderWithin(candidates.get(0), scaled(10));
            List<Integer> order = new ArrayList<>();
            List<Long> terms = new ArrayList<>();
            for (int round = 0; round < 6; round++) {
                int leader = awaitOneLeader(candidates, scaled(10));
                Lease term = candidates.get(leader).leadership().orElseThrow();
                order.add(leader);
                terms.add(term.fencingToken());
                // The others are candidates, not leaders.
                for (int i = 0; i < 3; i++) {
                    if (i != leader) {
                        assertThat(candidates.get(i).leadership()).isEmpty();
                    }
                }
                // FIFO is by arrival at the backend: let the last one to give up arrive first.
                await().atMost(scaled(10))
                        .until(() -> entries(lockOf("succession")).size() == 3);
                term.close(); // give up: the next one leads, this one rejoins at the back
                assertThat(term.isValid()).isFalse();
            }
            for (int i = 1; i < terms.size(); i++) {
                assertThat(terms.get(i)).as("term %d after %d", i, i - 1).isGreaterThan(terms.get(i - 1));
            }
            for (int i = 1; i < order.size(); i++) {
                assertThat(order.get(i))
                        .as("a term given up goes to another candidate: %s", order)
                        .isNotEqualTo(order.get(i - 1));
            }
            if (fair) {
                assertThat(order)
                        .as("FIFO: a candidate that gave up rejoined at the back")
                        .containsExactly(0, 1, 2, 0, 1, 2);
            }
            assertThat(sampler.samples()).isGreaterThan(10);
            assertThat(sampler.violations()).as("samples with two leaders").isEmpty();
        }
        candidates.forEach(LeaderElection::close);
        assertThat(entries(lockOf("succession"))).isEmpty();
    }

    /** The index of the one candidate that leads, waiting for one; fails if two lead. */
    private static int awaitOneLeader(List<LeaderElection> candidates, Duration wait) {
        AtomicInteger found = new AtomicInteger(-1);
        await().atMost(wait).pollInterval(Duration.ofMillis(5)).until(() -> {
            for (int i = 0; i < candidates.size(); i++) {
                if (candidates.get(i).leadership().isPresent()) {
                    found.set(i);
                    return true;
                }
            }
            return false;
        });
        return found.get();
    }

    @Test
    default void currentLeader_observerAndCandidatesSeeTheSameTerm_emptyBetweenTerms() throws Exception {
        LeaderElection observer = newClient().leaderElection("who");
        assertThat(observer.currentLeader()).as("before any candidate").isEmpty();
        LeaderElection a = newClient().leaderElection("who").start();
        Lease first = leaderWithin(a, scaled(10));
        LeaderElection b = newClient().leaderElection("who").start();
        await().atMost(scaled(10)).until(() -> entries(lockOf("who")).size() == 2);

        Leader seen = observer.currentLeader().orElseThrow();
        assertThat(seen.election()).isEqualTo("who");
        assertThat(seen.term()).isEqualTo(first.fencingToken());
        assertThat(seen.self()).isFalse();
        Leader byLeader = a.currentLeader().orElseThrow();
        assertThat(byLeader.self()).isTrue();
        assertThat(byLeader.term()).isEqualTo(first.fencingToken());
        assertThat(b.currentLeader().orElseThrow().self()).isFalse();
        assertThat(b.currentLeader().orElseThrow().term()).isEqualTo(first.fencingToken());
        assertThat(observer.leadership()).as("asking joins nothing").isEmpty();
        assertThat(entries(lockOf("who"))).hasSize(2);
        // A lock whose name starts with the election's is another lock.
        try (Lease other = newClient().lock("election:who-else").acquire()) {
            assertThat(observer.currentLeader().orElseThrow().term()).isEqualTo(first.fencingToken());
        }

        a.close();
        Lease second = leaderWithin(b, scaled(10));
        await().atMost(scaled(5))
                .untilAsserted(() ->
                        assertThat(observer.currentLeader().map(Leader::term)).contains(second.fencingToken()));
        b.close();
        await().atMost(scaled(10)).until(() -> observer.currentLeader().isEmpty());
        assertThat(entries(lockOf("who"))).isEmpty();
    }

    @Test
    default void closeTerm_nextElectedAndOldCandidateRejoinsAtTheBack() throws Exception {
        Recorder ra = new Recorder();
        Recorder rb = new Recorder();
        LeaderElection a = ra.attach(newClient().leaderElection("giveup")).start();
        Lease first = leaderWithin(a, scaled(10));
        LeaderElection b = rb.attach(newClient().leaderElection("giveup")).start();
        await().atMost(scaled(10)).until(() -> entries(lockOf("giveup")).size() == 2);
        long gaveUpAt = System.nanoTime();
        first.close();
        Lease second = leaderWithin(b, scaled(10));
        long handOverMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - gaveUpAt);
        System.out.println("[election] " + backendName() + ": term given up -> next elected in " + handOverMs + " ms");
        assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
        assertThat(first.isValid()).isFalse();
        assertThat(a.leadership()).isEmpty();
        // a is a candidate again, behind b.
        await().atMost(scaled(10)).until(() -> entries(lockOf("giveup")).size() == 2);
        second.close();
        Lease third = leaderWithin(a, scaled(10));
        assertThat(third.fencingToken()).isGreaterThan(second.fencingToken());
        await().atMost(scaled(5)).until(() -> ra.events.size() == 3 && rb.events.size() == 2);
        assertThat(ra.events)
                .containsExactly("E" + first.fencingToken(), "R" + first.fencingToken(), "E" + third.fencingToken());
        assertThat(rb.events).containsExactly("E" + second.fencingToken(), "R" + second.fencingToken());
        a.close();
        b.close();
        assertThat(entries(lockOf("giveup"))).isEmpty();
    }

    @Test
    default void close_leader_revokedOnceAndNextElectedWithinHandOver() throws Exception {
        Recorder ra = new Recorder();
        LeaderElection a = ra.attach(newClient().leaderElection("leave")).start();
        Lease term = leaderWithin(a, scaled(10));
        LeaderElection b = newClient().leaderElection("leave").start();
        await().atMost(scaled(10)).until(() -> entries(lockOf("leave")).size() == 2);
        long closedAt = System.nanoTime();
        a.close();
        assertThat(term.isValid()).isFalse();
        assertThat(a.leadership()).isEmpty();
        Lease next = leaderWithin(b, scaled(5));
        long handOverMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - closedAt);
        System.out.println(
                "[election] " + backendName() + ": leader's election closed -> next elected in " + handOverMs + " ms");
        assertThat(next.fencingToken()).isGreaterThan(term.fencingToken());
        await().atMost(scaled(5)).until(() -> ra.events.size() == 2);
        Thread.sleep(200); // nothing more comes
        assertThat(ra.events).containsExactly("E" + term.fencingToken(), "R" + term.fencingToken());
        a.close(); // again: nothing
        assertThat(ra.events).hasSize(2);
        assertThatThrownBy(a::start).isInstanceOf(IllegalStateException.class);
        assertThat(entries(lockOf("leave"))).hasSize(1);
        b.close();
        assertThat(entries(lockOf("leave"))).isEmpty();
    }

    @Test
    default void leaderKilled_nextElectedWithinCrashReleaseBound_neverTwoLeaders() throws Exception {
        FencedStore store = FencedStore.fenced();
        List<LeaderElection> candidates =
                List.of(newClient().leaderElection("crash"), newClient().leaderElection("crash"));
        try (ChildJvm leader = ChildJvm.start(LockWorker.class, List.of("lead", uri(shortLease()), "crash"))) {
            long exLeaderTerm =
                    Long.parseLong(leader.awaitLine("LEADING", scaled(30)).split(" ")[1]);
            assertThat(store.write("ex-leader", exLeaderTerm, 1)).isTrue();
            try (LeadershipSampler sampler = LeadershipSampler.start(candidates)) {
                candidates.forEach(LeaderElection::start);
                await().atMost(scaled(10)).until(() -> entries(lockOf("crash")).size() == 3);
                assertThat(candidates).allMatch(c -> c.leadership().isEmpty());
                long killedAt = System.nanoTime();
                leader.kill();
                int next = awaitOneLeader(candidates, scaled(30));
                long passedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
                System.out.println("[election] " + backendName() + ": leader killed -> next elected in " + passedMs
                        + " ms (bound " + crashReleaseBound().toMillis() + " ms)");
                assertThat(passedMs)
                        .isLessThan(Timing.scale(crashReleaseBound()).toMillis());
                Lease term = candidates.get(next).leadership().orElseThrow();
                assertThat(term.fencingToken()).isGreaterThan(exLeaderTerm);
                assertThat(store.write("leader-" + next, term.fencingToken(), 2))
                        .isTrue();
                // The deposed leader's late write is refused by its term number.
                assertThat(store.write("ex-leader", exLeaderTerm, 3)).isFalse();
                assertThat(store.value()).isEqualTo(2);
                // Hand over once more, still under the sampler's watch.
                term.close();
                int after = awaitOneLeader(candidates, scaled(10));
                assertThat(after).isNotEqualTo(next);
                assertThat(sampler.samples()).isGreaterThan(10);
                assertThat(sampler.violations()).as("samples with two leaders").isEmpty();
            }
        }
        candidates.forEach(LeaderElection::close);
        assertThat(entries(lockOf("crash"))).isEmpty();
    }

    @Test
    default void listeners_revokedOncePerTermAndBeforeTheNextElected() throws Exception {
        Recorder r = new Recorder();
        LeaderElection e = r.attach(newClient().leaderElection("listeners")).start();
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            Lease term = leaderWithin(e, scaled(10));
            expected.add("E" + term.fencingToken());
            expected.add("R" + term.fencingToken());
            term.close();
            term.close(); // again: nothing
        }
        Lease last = leaderWithin(e, scaled(10));
        expected.add("E" + last.fencingToken());
        expected.add("R" + last.fencingToken());
        e.close();
        await().atMost(scaled(5)).until(() -> r.events.size() == expected.size());
        Thread.sleep(200); // nothing more comes
        assertThat(r.events).containsExactlyElementsOf(expected);
        assertThat(r.maxRunning.get()).as("listeners running at once").isEqualTo(1);
        assertThat(entries(lockOf("listeners"))).isEmpty();
    }

    @Test
    default void awaitLeadership_zeroAndTimeouts_answerInTime() throws Exception {
        LeaderElection a = newClient().leaderElection("await");
        assertThat(a.awaitLeadership(Duration.ZERO)).as("not started").isEmpty();
        a.start();
        Lease term = leaderWithin(a, scaled(10));
        assertThat(a.awaitLeadership(Duration.ZERO)).contains(term);
        assertThat(a.leadership()).contains(term);
        LeaderElection b = newClient().leaderElection("await").start();
        long start = System.nanoTime();
        assertThat(b.awaitLeadership(Duration.ZERO)).isEmpty();
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start)).isLessThan(500);
        start = System.nanoTime();
        assertThat(b.awaitLeadership(Duration.ofMillis(300))).isEmpty();
        long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(waitedMs).isBetween(290L, 3_000L);
        // A waiter is woken by the election, not by its timeout.
        CompletableFuture<Optional<Lease>> waiting = CompletableFuture.supplyAsync(() -> {
            try {
                return b.awaitLeadership(Duration.ofMinutes(1));
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
        });
        a.close();
        assertThat(waiting.get(scaled(10).toMillis(), TimeUnit.MILLISECONDS)).isPresent();
        b.close();
        assertThat(b.awaitLeadership(Duration.ofSeconds(1))).as("closed").isEmpty();
        assertThat(entries(lockOf("await"))).isEmpty();
    }

    @Test
    @SuppressWarnings("NullAway") // nulls on purpose
    default void badInput_illegalArgumentAndNothingChanged() throws Exception {
        LockClient client = newClient();
        assertThatThrownBy(() -> client.leaderElection("no/slash")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> client.leaderElection("")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> client.leaderElection(null)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> client.leaderElection("x".repeat(192))).isInstanceOf(IllegalArgumentException.class);
        LeaderElection e = client.leaderElection("bad");
        assertThatThrownBy(() -> e.onElected(null)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> e.onRevoked(null)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> e.awaitLeadership(Duration.ofMillis(-1))).isInstanceOf(IllegalArgumentException.class);
        assertThat(entries(lockOf("bad"))).isEmpty();
        // Nothing changed: the election still works.
        e.start();
        e.start(); // again: nothing
        Lease term = leaderWithin(e, scaled(10));
        assertThatThrownBy(() -> e.awaitLeadership(Duration.ofMillis(-1))).isInstanceOf(IllegalArgumentException.class);
        assertThat(term.isValid()).isTrue();
        assertThat(entries(lockOf("bad"))).hasSize(1);
        e.close();
        assertThat(entries(lockOf("bad"))).isEmpty();
    }

    @Test
    default void term_ownedByNoThread_notReenteredAndNoCollisionWithTheLockOfTheSameName() throws Exception {
        LockClient client = newClient();
        LeaderElection e = client.leaderElection("orders").start();
        Lease term = leaderWithin(e, scaled(10));
        // The election's lock is not re-entered by this client's threads: no thread owns the term.
        assertThat(client.lock(lockOf("orders")).tryAcquire(Duration.ZERO)).isEmpty();
        Optional<Lease> fromAnother = CompletableFuture.supplyAsync(() -> {
                    try {
                        return client.lock(lockOf("orders")).tryAcquire(Duration.ZERO);
                    } catch (InterruptedException ex) {
                        throw new IllegalStateException(ex);
                    }
                })
                .get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(fromAnother).isEmpty();
        // The lock "orders" is another name.
        try (Lease lock = newClient().lock("orders").tryAcquire(scaled(5)).orElseThrow()) {
            assertThat(lock.isValid()).isTrue();
            assertThat(term.isValid()).isTrue();
        }
        // The term may be given up from any thread.
        CompletableFuture.runAsync(term::close).get(scaled(10).toMillis(), TimeUnit.MILLISECONDS);
        assertThat(term.isValid()).isFalse();
        e.close();
        assertThat(entries(lockOf("orders"))).isEmpty();
    }

    @Test
    default void clientClose_leaderRevokedAndNextElected() throws Exception {
        LockClient leaderClient = newClient();
        Recorder r = new Recorder();
        LeaderElection a = r.attach(leaderClient.leaderElection("client-close")).start();
        Lease term = leaderWithin(a, scaled(10));
        LeaderElection b = newClient().leaderElection("client-close").start();
        await().atMost(scaled(10)).until(() -> entries(lockOf("client-close")).size() == 2);
        leaderClient.close();
        assertThat(term.isValid()).isFalse();
        assertThat(leaderWithin(b, scaled(10)).fencingToken()).isGreaterThan(term.fencingToken());
        await().atMost(scaled(5)).until(() -> r.events.size() == 2);
        assertThat(r.events).containsExactly("E" + term.fencingToken(), "R" + term.fencingToken());
        b.close();
        assertThat(entries(lockOf("client-close"))).isEmpty();
    }
}
