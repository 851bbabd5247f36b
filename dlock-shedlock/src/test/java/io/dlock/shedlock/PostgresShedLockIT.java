package io.dlock.shedlock;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.PostgresServer;
import io.dlock.testkit.TestServer;
import org.junit.jupiter.api.BeforeAll;

/** ShedLock's provider cases on Postgres, started by the testkit. */
@DlockServer(value = DlockServer.Kind.POSTGRES, scope = DlockServer.Scope.RUN)
class PostgresShedLockIT extends ShedLockProviderCases {
    static PostgresServer server;

    @BeforeAll
    static void server(PostgresServer started) {
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
