package io.dlock.jdbc;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.PostgresServer;
import org.junit.jupiter.api.BeforeAll;

/** PostgreSQL from the testkit, one server for the whole test run. */
@DlockServer(value = DlockServer.Kind.POSTGRES, scope = DlockServer.Scope.RUN)
abstract class PostgresTestSupport extends JdbcTestSupport {
    static PostgresServer postgres;

    @BeforeAll
    static void database(PostgresServer started) {
        postgres = started;
    }

    @Override
    boolean alive() {
        return postgres.isAlive();
    }

    @Override
    public String jdbcUrl() {
        return postgres.jdbcUrl() + "?user=" + PostgresServer.USER + "&password=" + PostgresServer.PASSWORD;
    }
}
