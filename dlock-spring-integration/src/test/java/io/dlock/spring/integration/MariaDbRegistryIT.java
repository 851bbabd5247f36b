package io.dlock.spring.integration;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.MariaDbServer;
import org.junit.jupiter.api.BeforeAll;

/** The registry contract on MariaDB, a fresh lock table per test. */
@DlockServer(value = DlockServer.Kind.MARIADB, scope = DlockServer.Scope.RUN)
class MariaDbRegistryIT extends LeaseRegistryContract {
    static MariaDbServer server;

    @BeforeAll
    static void server(MariaDbServer started) {
        server = started;
    }

    @Override
    String uri(String namespace) {
        return server.uri(namespace) + "&createTable=true";
    }
}
