package io.dlock.reactor;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.RedisServer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/**
 * {@link ReactorContract} on a redis-server; one key prefix per test, marked as never used so that
 * its first grant need not wait out the data-loss fence.
 */
@DlockServer(DlockServer.Kind.REDIS)
class RedisReactorIT extends ReactorContract {
    static RedisServer server;

    String prefix;

    @BeforeAll
    static void server(RedisServer started) {
        server = started;
    }

    @BeforeEach
    void newPrefix(TestInfo info) {
        prefix = "rx-" + info.getTestMethod().orElseThrow().getName();
        server.markFreshPrefix(prefix);
    }

    @Override
    public String backendName() {
        return "redis";
    }

    @Override
    public String shortLease() {
        return "leaseTime=2s";
    }

    @Override
    public java.time.Duration crashReleaseBound() {
        return java.time.Duration.ofSeconds(5);
    }

    @Override
    public String uri(String query) {
        return server.uri(prefix) + (query.isEmpty() ? "" : "&" + query);
    }

    @Override
    String uriVia(int port, String query) {
        return "redis://127.0.0.1:" + port + "?keyPrefix=" + prefix + "&" + query;
    }

    @Override
    int serverPort() {
        return server.port();
    }
}
