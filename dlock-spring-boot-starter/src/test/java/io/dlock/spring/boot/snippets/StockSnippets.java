package io.dlock.spring.boot.snippets;

import io.dlock.spring.boot.annotation.DistributedLock;
import io.dlock.spring.boot.annotation.DistributedLocks;
import io.dlock.spring.boot.annotation.ScheduledLock;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * The Spring snippets of README.md and docs/spring-boot.md, compiled here; the docs quote the
 * regions between {@code tag::} and {@code end::} and DocsTest checks that they match.
 */
@SuppressWarnings("unused")
class StockSnippets {

    interface Store {
        boolean decrement(String item, long token);

        int read(String item);

        void write(String item, int left, long token);
    }

    interface Reports {
        void send();
    }

    final Store store;
    final Reports reports;

    StockSnippets(Store store, Reports reports) {
        this.store = store;
        this.reports = reports;
    }

    static class Readme extends StockSnippets {
        Readme(Store store, Reports reports) {
            super(store, reports);
        }

        // spotless:off
        // tag::readme[]
        @DistributedLock(key = "'stock:' + #item", waitTime = "5s")
        public boolean buy(String item) {
            long token = DistributedLocks.currentLease().fencingToken();
            return store.decrement(item, token);   // the store refuses tokens older than the last it saw
        }

        @Scheduled(fixedRate = 60_000)
        @ScheduledLock(name = "nightly-report", lockAtMostFor = "10m")
        public void report() { reports.send(); } // one node runs it; the others skip the run
        // end::readme[]
        // spotless:on
    }

    static class Guide extends StockSnippets {
        Guide(Store store, Reports reports) {
            super(store, reports);
        }

        // spotless:off
        // tag::buy[]
        @DistributedLock(key = "'stock:' + #item", waitTime = "5s")
        public boolean buy(String item) {
            long token = DistributedLocks.currentLease().fencingToken();
            int left = store.read(item);
            if (left == 0) return false;
            store.write(item, left - 1, token);   // the store refuses tokens older than the last it saw
            return true;
        }
        // end::buy[]
        // spotless:on
    }
}
