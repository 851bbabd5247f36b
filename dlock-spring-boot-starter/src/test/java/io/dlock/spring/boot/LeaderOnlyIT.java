package io.dlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.spring.boot.actuate.DLockEndpoint;
import io.dlock.spring.boot.annotation.ActiveLocks;
import io.dlock.spring.boot.annotation.LeaderOnly;
import io.dlock.spring.boot.leader.LeaderElectedEvent;
import io.dlock.spring.boot.leader.LeaderElections;
import io.dlock.spring.boot.leader.LeaderRevokedEvent;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.event.EventListener;

/**
 * {@code @LeaderOnly} and {@link LeaderElections} in real application contexts, two "nodes" on one
 * ZooKeeper: the annotated method runs on the leader only, with its term bound; elected and
 * revoked events in order; the context's stop hands leadership over; the endpoint and the health
 * details show each node's part; bad annotations fail the startup.
 */
class LeaderOnlyIT {
    static Backend backend;

    @BeforeAll
    static void start() {
        backend = Backend.zookeeper();
    }

    @AfterAll
    static void stop() {
        backend.close();
    }

    /** A job that one node of the fleet runs. */
    public static class Reports {
        final AtomicInteger runs = new AtomicInteger();
        final List<Long> terms = new CopyOnWriteArrayList<>();

        @LeaderOnly("${jobs.election:reports}")
        public void run() {
            runs.incrementAndGet();
            terms.add(LeaderElections.currentTerm().fencingToken());
        }

        /** Read through the proxy: its own fields are not the target's. */
        public int runs() {
            return runs.get();
        }

        public List<Long> terms() {
            return List.copyOf(terms);
        }

        @LeaderOnly("reports")
        public Optional<Long> term() {
            return Optional.of(LeaderElections.currentTerm().fencingToken());
        }

        @LeaderOnly("reports")
        public CompletableFuture<String> async() {
            return CompletableFuture.completedFuture("ran");
        }
    }

    /** The events this node saw, in order: {@code E<term>} and {@code R<term>}. */
    public static class Events {
        final List<String> seen = new CopyOnWriteArrayList<>();

        @EventListener
        public void elected(LeaderElectedEvent e) {
            seen.add("E" + e.term().fencingToken());
        }

        @EventListener
        public void revoked(LeaderRevokedEvent e) {
            seen.add("R" + e.term().fencingToken() + (e.term().isValid() ? "-STILL-VALID" : ""));
        }
    }

    public static class Primitive {
        @LeaderOnly("reports")
        public int count() {
            return 1;
        }
    }

    public static class BadName {
        @LeaderOnly("has space")
        public void run() {}
    }

    private ApplicationContextRunner node(String ns) {
        return new ApplicationContextRunner()
                .withConfiguration(StarterConfigs.ALL)
                .withPropertyValues("dlock.uri=" + backend.uri(ns))
                .withBean(Reports.class)
                .withBean(Events.class);
    }

    @Test
    void twoNodes_onlyTheLeaderRuns_eventsInOrder_andStopHandsOver() {
        String ns = "leader-only";
        node(ns).run(first -> {
            assertThat(first).hasNotFailed();
            Events firstEvents = first.getBean(Events.class);
            await().atMost(Duration.ofSeconds(10)).until(() -> firstEvents.seen.size() == 1);
            long firstTerm = Long.parseLong(firstEvents.seen.get(0).substring(1));
            Reports firstReports = first.getBean(Reports.class);
            firstReports.run();
            assertThat(firstReports.runs()).isEqualTo(1);
            assertThat(firstReports.terms()).containsExactly(firstTerm);
            assertThat(firstReports.term()).contains(firstTerm);

            node(ns).run(second -> {
                assertThat(second).hasNotFailed();
                Reports secondReports = second.getBean(Reports.class);
                LeaderElections secondElections = second.getBean(LeaderElections.class);
                await().atMost(Duration.ofSeconds(10)).until(() -> secondElections
                        .election("reports")
                        .currentLeader()
                        .isPresent());
                secondReports.run();
                assertThat(secondReports.runs()).as("skipped: not the leader").isZero();
                assertThat(secondReports.term()).isEmpty();
                assertThat(secondReports.async()).isCompletedWithValue(null);
                assertThat(firstReports.async()).isCompletedWithValue("ran");
                assertThat(secondElections
                                .election("reports")
                                .currentLeader()
                                .orElseThrow()
                                .term())
                        .isEqualTo(firstTerm);

                Map<String, Object> view = new DLockEndpoint(
                                first.getBean(ActiveLocks.class), first.getBean(LeaderElections.class))
                        .locks();
                assertThat(view.get("elections"))
                        .isEqualTo(Map.of("reports", Map.of("leader", true, "term", firstTerm)));
                assertThat(BootLine.healthNow(first).details())
                        .containsEntry("elections", Map.of("reports", "leader, term " + firstTerm));
                assertThat(BootLine.healthNow(second).details())
                        .containsEntry("elections", Map.of("reports", "candidate"));

                // The first node stops: its term ends, the second is elected with a higher term.
                first.close();
                assertThat(firstEvents.seen).containsExactly("E" + firstTerm, "R" + firstTerm);
                Events secondEvents = second.getBean(Events.class);
                await().atMost(Duration.ofSeconds(10)).until(() -> secondEvents.seen.size() == 1);
                long secondTerm = Long.parseLong(secondEvents.seen.get(0).substring(1));
                assertThat(secondTerm).isGreaterThan(firstTerm);
                secondReports.run();
                assertThat(secondReports.runs()).isEqualTo(1);
                assertThat(secondReports.terms()).containsExactly(secondTerm);
                ((ConfigurableApplicationContext) second.getSourceApplicationContext()).close();
                assertThat(secondEvents.seen).containsExactly("E" + secondTerm, "R" + secondTerm);
            });
        });
    }

    @Test
    void primitiveReturn_orBadName_failsTheStartup() {
        new ApplicationContextRunner()
                .withConfiguration(StarterConfigs.ALL)
                .withPropertyValues("dlock.uri=" + backend.uri("leader-bad"))
                .withBean(Primitive.class)
                .run(ctx -> assertThat(ctx.getStartupFailure())
                        .hasStackTraceContaining("@LeaderOnly")
                        .hasStackTraceContaining("int"));
        new ApplicationContextRunner()
                .withConfiguration(StarterConfigs.ALL)
                .withPropertyValues("dlock.uri=" + backend.uri("leader-bad"))
                .withBean(BadName.class)
                .run(ctx -> assertThat(ctx.getStartupFailure())
                        .hasStackTraceContaining("@LeaderOnly")
                        .hasStackTraceContaining("has space"));
    }

    @Test
    void noLockClient_leaderOnlyFailsTheStartup() {
        new ApplicationContextRunner()
                .withConfiguration(StarterConfigs.ALL)
                .withBean(Reports.class)
                .run(ctx -> assertThat(ctx.getStartupFailure())
                        .hasMessageContaining("@LeaderOnly")
                        .hasMessageContaining("LockClient"));
    }
}
