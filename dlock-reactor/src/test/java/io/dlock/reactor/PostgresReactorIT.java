package io.dlock.reactor;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.PostgresServer;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;

/** {@link ReactorContract} on PostgreSQL (one server for the test run); one table per test. */
@DlockServer(value = DlockServer.Kind.POSTGRES, scope = DlockServer.Scope.RUN)
class PostgresReactorIT extends ReactorContract {
    private static final AtomicInteger TABLES = new AtomicInteger();

    static PostgresServer postgres;

    String table;

    @BeforeAll
    static void database(PostgresServer started) {
        postgres = started;
    }

    @BeforeEach
    void newTable() {
        table = "rx" + TABLES.incrementAndGet() + "_" + ProcessHandle.current().pid();
    }

    @Override
    public String backendName() {
        return "jdbc";
    }

    @Override
    public String shortLease() {
        return "leaseTime=2s";
    }

    @Override
    public java.time.Duration crashReleaseBound() {
        return java.time.Duration.ofSeconds(5);
    }

    @Override
    public String uri(String query) {
        return postgres.uri(table) + "&createTable=true" + (query.isEmpty() ? "" : "&" + query);
    }

    @Override
    String uriVia(int port, String query) {
        return "jdbc:postgresql://127.0.0.1:" + port + "/" + PostgresServer.DATABASE + "?user=" + PostgresServer.USER
                + "&password=" + PostgresServer.PASSWORD + "&dlockTable=" + table + "&createTable=true&" + query;
    }

    @Override
    int serverPort() {
        return postgres.port();
    }
}
