package com.example.dlock.boot;

import io.dlock.spring.boot.annotation.DistributedLock;
import io.dlock.spring.boot.annotation.DistributedLocks;
import org.springframework.stereotype.Service;

@Service
public class NightlyReport {
    /**
     * Runs {@code work} while holding the lock {@code report:<day>}, on one instance at a time.
     *
     * @return the fencing token of the lease it ran under, for the writes the report makes
     */
    @DistributedLock(key = "'report:' + #day", waitTime = "30s")
    public long run(String day, Runnable work) {
        long token = DistributedLocks.currentLease().fencingToken();
        work.run();
        return token;
    }
}
