package io.dlock.spring.boot;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

class ZooKeeperScheduledLockIT extends ScheduledLockContract {
    @BeforeAll
    static void start() {
        backend = Backend.zookeeper();
    }

    @AfterAll
    static void stop() {
        backend.close();
    }
}
