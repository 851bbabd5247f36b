package io.dlock.spring.boot.snippets;

import io.dlock.spring.boot.annotation.LeaderOnly;
import io.dlock.spring.boot.leader.LeaderElectedEvent;
import io.dlock.spring.boot.leader.LeaderElections;
import io.dlock.spring.boot.leader.LeaderRevokedEvent;
import org.springframework.context.event.EventListener;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * The leader-election snippet of docs/spring-boot.md and docs/leader-election.md, compiled here;
 * the docs quote the region between {@code tag::} and {@code end::} and DocsTest checks that it
 * matches. {@code LeaderOnlyIT} runs the same shape on two nodes.
 */
@SuppressWarnings("unused")
class LeaderSnippets {

    interface Reports {
        void send(long term);
    }

    interface Consumer {
        void start(long term);

        void stop();
    }

    private final Reports reports = term -> {};
    private final Consumer consumer = new Consumer() {
        @Override
        public void start(long term) {}

        @Override
        public void stop() {}
    };

    // spotless:off
    // tag::leader[]
    @Scheduled(fixedRate = 60_000)
    @LeaderOnly("reports")                 // runs on the leader only; skipped on the others
    public void report() {
        reports.send(LeaderElections.currentTerm().fencingToken()); // the term number fences the writes
    }

    @EventListener
    public void elected(LeaderElectedEvent e) { consumer.start(e.term().fencingToken()); }

    @EventListener
    public void revoked(LeaderRevokedEvent e) { consumer.stop(); }   // once per term, after elected
    // end::leader[]
    // spotless:on
}
