package io.dlock.shedlock;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.NewDeployment;
import io.dlock.testkit.RedisServer;
import io.dlock.testkit.TestServer;
import org.junit.jupiter.api.BeforeAll;

/** ShedLock's provider cases on Redis, started by the testkit. */
@DlockServer(DlockServer.Kind.REDIS)
class RedisShedLockIT extends ShedLockProviderCases {
    static RedisServer server;

    @BeforeAll
    static void server(RedisServer started) {
        server = started;
        // A fresh server is fenced for one lease unless marked new, as `dlock init` does.
        NewDeployment.mark(started.uri("shedlock"));
    }

    @Override
    TestServer server() {
        return server;
    }
}
