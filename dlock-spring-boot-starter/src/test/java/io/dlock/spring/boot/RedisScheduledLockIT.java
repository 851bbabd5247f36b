package io.dlock.spring.boot;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

class RedisScheduledLockIT extends ScheduledLockContract {
    @BeforeAll
    static void start() {
        backend = Backend.redis();
    }

    @AfterAll
    static void stop() {
        backend.close();
    }
}
