package io.dlock.jdbc;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.MariaDbServer;
import org.junit.jupiter.api.BeforeAll;

/** MariaDB from the testkit, one server for the whole test run. */
@DlockServer(value = DlockServer.Kind.MARIADB, scope = DlockServer.Scope.RUN)
abstract class MariaDbTestSupport extends JdbcTestSupport {
    static MariaDbServer mariadb;

    @BeforeAll
    static void database(MariaDbServer started) {
        mariadb = started;
    }

    @Override
    boolean alive() {
        return mariadb.isAlive();
    }

    @Override
    public String jdbcUrl() {
        return mariadb.jdbcUrl() + "?user=" + MariaDbServer.USER + "&password=" + MariaDbServer.PASSWORD;
    }
}
