package io.dlock.shedlock;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.MariaDbServer;
import io.dlock.testkit.TestServer;
import org.junit.jupiter.api.BeforeAll;

/** ShedLock's provider cases on MariaDb, started by the testkit. */
@DlockServer(value = DlockServer.Kind.MARIADB, scope = DlockServer.Scope.RUN)
class MariaDbShedLockIT extends ShedLockProviderCases {
    static MariaDbServer server;

    @BeforeAll
    static void server(MariaDbServer started) {
        server = started;
    }

    @Override
    TestServer server() {
        return server;
    }

    @Override
    String baseOptions() {
        return "createTable=true";
    }
}
