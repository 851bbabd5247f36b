package io.dlock.spring.boot;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

class RedisAnnotationIT extends AnnotationContract {
    @BeforeAll
    static void start() {
        backend = Backend.redis();
    }

    @AfterAll
    static void stop() {
        backend.close();
    }
}
