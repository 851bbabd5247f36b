package io.dlock.spring.boot;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

class RedisMetricsHealthIT extends MetricsHealthContract {
    @BeforeAll
    static void start() {
        backend = Backend.redis();
    }

    @AfterAll
    static void stop() {
        backend.close();
    }
}
