package io.dlock.shedlock;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.MemcachedServer;
import io.dlock.testkit.NewDeployment;
import io.dlock.testkit.TestServer;
import org.junit.jupiter.api.BeforeAll;

/** ShedLock's provider cases on Memcached, started by the testkit. */
@DlockServer(DlockServer.Kind.MEMCACHED)
class MemcachedShedLockIT extends ShedLockProviderCases {
    static MemcachedServer server;

    @BeforeAll
    static void server(MemcachedServer started) {
        server = started;
        // A fresh server is fenced for one lease unless marked new, as `dlock init` does.
        NewDeployment.mark(started.uri("shedlock"));
    }

    @Override
    TestServer server() {
        return server;
    }

    @Override
    java.time.Duration crashReleaseBound() {
        // The dead holder's key lives its lease rounded up plus one second (3 s); a poll comes soon after.
        return java.time.Duration.ofSeconds(6);
    }
}
