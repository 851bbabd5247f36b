package io.dlock.spring.integration;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.RedisServer;
import org.junit.jupiter.api.BeforeAll;

/** The registry contract on a standalone redis-server. */
@DlockServer(DlockServer.Kind.REDIS)
class RedisRegistryIT extends LeaseRegistryContract {
    static RedisServer server;

    @BeforeAll
    static void server(RedisServer started) {
        server = started;
    }

    @Override
    void prepare(String namespace) {
        server.markFreshPrefix(namespace); // a fresh test prefix never granted anything: no data-loss fence
    }

    @Override
    String uri(String namespace) {
        return server.uri(namespace);
    }
}
