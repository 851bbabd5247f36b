package io.dlock.spring.integration;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.PostgresServer;
import org.junit.jupiter.api.BeforeAll;

/** The registry contract on PostgreSQL, a fresh lock table per test. */
@DlockServer(value = DlockServer.Kind.POSTGRES, scope = DlockServer.Scope.RUN)
class PostgresRegistryIT extends LeaseRegistryContract {
    static PostgresServer server;

    @BeforeAll
    static void server(PostgresServer started) {
        server = started;
    }

    @Override
    String uri(String namespace) {
        return server.uri(namespace) + "&createTable=true";
    }
}
