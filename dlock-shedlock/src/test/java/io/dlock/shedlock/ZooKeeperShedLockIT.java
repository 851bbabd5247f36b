package io.dlock.shedlock;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.EmbeddedZooKeeper;
import io.dlock.testkit.TestServer;
import org.junit.jupiter.api.BeforeAll;

/** ShedLock's provider cases on ZooKeeper, started by the testkit. */
@DlockServer(DlockServer.Kind.ZOOKEEPER)
class ZooKeeperShedLockIT extends ShedLockProviderCases {
    static EmbeddedZooKeeper server;

    @BeforeAll
    static void server(EmbeddedZooKeeper started) {
        server = started;
    }

    @Override
    TestServer server() {
        return server;
    }

    @Override
    String shortLease() {
        return "sessionTimeout=2s";
    }

    @Override
    java.time.Duration crashReleaseBound() {
        // Session timeout (2 s) plus the server's expiry tick and a margin.
        return java.time.Duration.ofSeconds(6);
    }
}
