package io.dlock.spring.boot;

import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.spring.boot.annotation.DistributedLocks;
import io.dlock.spring.boot.annotation.ScheduledLock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.scheduling.annotation.Scheduled;

/** Scheduled jobs for the starter's tests; {@code runs} is shared by every context of a test. */
public class Jobs {
    private final List<Long> runs;
    final AtomicInteger direct = new AtomicInteger();

    /** Through the proxy (a class proxy's own fields are not the target's). */
    public int directRuns() {
        return direct.get();
    }

    public Jobs(List<Long> runs) {
        this.runs = runs;
    }

    /** Every even second on every node; at most one node runs each period. */
    @Scheduled(cron = "*/2 * * * * *")
    @ScheduledLock(name = "report", lockAtMostFor = "10s", lockAtLeastFor = "1500ms")
    public void report() {
        runs.add(System.currentTimeMillis());
    }

    @ScheduledLock(name = "cleanup", lockAtMostFor = "10s", lockAtLeastFor = "1s")
    public void cleanup() {
        direct.incrementAndGet();
    }

    /** Runs past its 500 ms bound and reports whether its lease went invalid while it ran. */
    @ScheduledLock(name = "long-job", lockAtMostFor = "500ms")
    public Boolean longJob() {
        Lease lease = DistributedLocks.currentLease();
        await().atMost(Duration.ofSeconds(10)).until(() -> !lease.isValid());
        return Boolean.TRUE;
    }
}
