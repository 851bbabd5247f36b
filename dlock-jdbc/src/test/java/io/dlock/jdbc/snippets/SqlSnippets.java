package io.dlock.jdbc.snippets;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.jdbc.FencedWrites;
import io.dlock.jdbc.JdbcLocks;
import java.sql.Connection;
import javax.sql.DataSource;

/**
 * The snippets of docs/backends/sql.md, compiled here; the page quotes the regions between {@code
 * tag::} and {@code end::} and DocsTest checks that they match.
 */
@SuppressWarnings({"unused", "try"})
final class SqlSnippets {

    private final DataSource dataSource;

    SqlSnippets(DataSource dataSource) {
        this.dataSource = dataSource;
    }

    void connect() {
        // spotless:off
        // tag::connect[]
        try (LockClient locks = LockClient.connect(
                "jdbc:postgresql://db:5432/app?user=app&password=secret&dlockTable=dlock_locks&leaseTime=30s")) {
            use(locks);
        }
        // or over your pool (HikariCP, …):
        LockClient locks = JdbcLocks.builder(dataSource).table("dlock_locks").maxConnections(4).connect();
        // end::connect[]
        // spotless:on
    }

    void fenced(LockClient locks) throws Exception {
        // spotless:off
        // tag::fenced[]
        FencedWrites fence = FencedWrites.of("dlock_fence");     // CREATE TABLE dlock_fence (resource VARCHAR(255) PRIMARY KEY, token BIGINT NOT NULL)
        try (Lease lease = locks.lock("stock-42").acquire();
             Connection c = dataSource.getConnection()) {
            c.setAutoCommit(false);
            fence.check(c, "stock-42", lease.fencingToken());     // refused if a later holder already wrote
            // UPDATE stock SET qty = qty - 1 WHERE id = 42 ...
            c.commit();
        }
        // end::fenced[]
        // spotless:on
    }

    private void use(LockClient locks) {}
}
