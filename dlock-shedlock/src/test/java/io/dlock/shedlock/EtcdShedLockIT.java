package io.dlock.shedlock;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.EtcdServer;
import io.dlock.testkit.NewDeployment;
import io.dlock.testkit.TestServer;
import org.junit.jupiter.api.BeforeAll;

/** ShedLock's provider cases on Etcd, started by the testkit. */
@DlockServer(DlockServer.Kind.ETCD)
class EtcdShedLockIT extends ShedLockProviderCases {
    static EtcdServer server;

    @BeforeAll
    static void server(EtcdServer started) {
        server = started;
        // A fresh server is fenced for one lease unless marked new, as `dlock init` does.
        NewDeployment.mark(started.uri("shedlock"));
    }

    @Override
    TestServer server() {
        return server;
    }
}
