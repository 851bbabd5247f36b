package io.dlock.shedlock.snippets;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.shedlock.DLockLockProvider;
import io.dlock.shedlock.DLockShedLock;
import java.util.List;
import net.javacrumbs.shedlock.core.LockAssert;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * The snippets of docs/shedlock.md, compiled here; the page quotes the regions between {@code
 * tag::} and {@code end::} and DocsTest checks that they match.
 */
@SuppressWarnings("unused")
final class ShedLockSnippets {
    private static final Logger log = LoggerFactory.getLogger(ShedLockSnippets.class);

    interface Batch {}

    interface Store {
        void write(Batch batch, long token);
    }

    private Store store = (batch, token) -> {};

    private List<Batch> batches() {
        return List.of();
    }

    static final class Configuration {
        // spotless:off
        // tag::beans[]
        @Bean(destroyMethod = "close")
        LockClient lockClient() {
            return LockClient.connect("zookeeper://zk1:2181,zk2:2181/shop"); // any dlock URI
        }

        @Bean
        LockProvider lockProvider(LockClient lockClient) {
            return DLockLockProvider.of(lockClient);
        }
        // end::beans[]
        // spotless:on
    }

    // spotless:off
    // tag::task[]
    @Scheduled(cron = "0 0 * * * *")
    @SchedulerLock(name = "hourly-export", lockAtMostFor = "10m", lockAtLeastFor = "1m")
    public void export() {
        LockAssert.assertLocked();                     // ShedLock's check, unchanged
        Lease lease = DLockShedLock.currentLease();    // dlock's lease of this run
        lease.onLost(e -> log.warn("export lost its lock: {}", e.getMessage()));
        for (Batch batch : batches()) {
            lease.checkValid();                        // stop once the lock is gone
            store.write(batch, lease.fencingToken());  // the store refuses older tokens
        }
    }
    // end::task[]
    // spotless:on
}
