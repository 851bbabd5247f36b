package io.dlock.jdbc;

import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.core.LockEngine;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.Map;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * dlock over a {@link DataSource} the application already has (a HikariCP pool, say), for when the
 * database's credentials, TLS and pool are set up in code rather than in a URI. Otherwise use
 * {@link LockClient#connect(String)} with a {@code jdbc:} URI.
 *
 * <pre>{@code
 * HikariDataSource pool = new HikariDataSource(config);        // yours
 * try (LockClient locks = JdbcLocks.connect(pool, LockOptions.defaults())) {
 *     try (Lease lease = locks.lock("orders").acquire()) {
 *         ...
 *     }
 * }
 * }</pre>
 *
 * <p>Connections: dlock runs at most {@code maxConnections} statements at once (default {@value
 * JdbcUri#DEFAULT_MAX_CONNECTIONS}), each on a connection borrowed from the pool for that statement
 * alone and given back at once, in autocommit; on PostgreSQL it also keeps one connection borrowed
 * for as long as the client is open, on which it LISTENs for wake-ups. Size the pool for that. A
 * pool the application has exhausted makes dlock's statements wait for the pool's own timeout and
 * fail with {@link LockBackendException}: acquisitions fail, and held leases turn invalid once
 * their renewals have failed for the lease time.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class JdbcLocks {
    private JdbcLocks() {}

    /**
     * Connects dlock through {@code dataSource}, with the lock table {@code dlock_locks}, which
     * must exist (see docs/backends/sql.md for its DDL, or use {@link #builder(DataSource)} with {@code
     * createTable(true)}).
     *
     * <p>Blocking: until one connection has been borrowed and the tables checked. Thread-safety:
     * safe from any thread. On failure: {@link LockBackendException} (the database cannot be
     * reached, refuses the credentials, or the table is missing: the message then holds the DDL);
     * nothing is left open and the pool is left as it was.
     *
     * @param dataSource the application's pool; not closed by dlock
     * @param options dlock's options
     * @return a client; closing it gives back its connection and leaves the pool open
     * @throws LockBackendException if the database cannot be used
     */
    public static LockClient connect(DataSource dataSource, LockOptions options) {
        return builder(dataSource).options(options).connect();
    }

    /**
     * A builder for a client over {@code dataSource} with a table, connection limit or table
     * creation of its own.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread; the builder itself is not. On
     * failure: {@link NullPointerException} for a null data source.
     *
     * @param dataSource the application's pool; not closed by dlock
     * @return a new builder
     */
    public static Builder builder(DataSource dataSource) {
        return new Builder(Objects.requireNonNull(dataSource, "dataSource"));
    }

    /**
     * Configures a client over a {@link DataSource}.
     *
     * <p>Thread-safety: not thread-safe; confine to one thread.
     */
    public static final class Builder {
        private final DataSource dataSource;
        private String table = JdbcUri.DEFAULT_TABLE;
        private boolean createTable;
        private int maxConnections = JdbcUri.DEFAULT_MAX_CONNECTIONS;
        private LockOptions options = LockOptions.defaults();

        private Builder(DataSource dataSource) {
            this.dataSource = dataSource;
        }

        /**
         * The lock table (its waiters live in {@code <table>_waiters}); default {@code dlock_locks}.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: {@link IllegalArgumentException}
         * for a name that is not an unquoted identifier, optionally schema-qualified.
         *
         * @param table the table name
         * @return this builder
         * @throws IllegalArgumentException if the name is not valid
         */
        public Builder table(String table) {
            JdbcUri.checkTable(table);
            this.table = table;
            return this;
        }

        /**
         * Whether dlock creates missing tables on connect (default false: a missing table is an
         * error that prints the DDL).
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: cannot fail.
         *
         * @param create whether to create them
         * @return this builder
         */
        public Builder createTable(boolean create) {
            this.createTable = create;
            return this;
        }

        /**
         * At most how many statements dlock runs at once, each on a connection of its own (default
         * {@value JdbcUri#DEFAULT_MAX_CONNECTIONS}); PostgreSQL's LISTEN connection comes on top.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: {@link IllegalArgumentException}
         * outside 1..64.
         *
         * @param max the limit
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder maxConnections(int max) {
            JdbcUri.checkMaxConnections(max);
            this.maxConnections = max;
            return this;
        }

        /**
         * dlock's options (lease time, fairness, renewal, …); default {@link LockOptions#defaults()}.
         *
         * <p>Blocking: never. Thread-safety: confined. On failure: {@link NullPointerException} for null.
         *
         * @param options the options
         * @return this builder
         */
        public Builder options(LockOptions options) {
            this.options = Objects.requireNonNull(options, "options");
            return this;
        }

        /**
         * Connects.
         *
         * <p>Blocking: until a connection has been borrowed and the tables checked. Thread-safety:
         * confined. On failure: {@link LockBackendException}; nothing is left open.
         *
         * @return the client
         * @throws LockBackendException if the database cannot be used or is not PostgreSQL,
         *     MariaDB/MySQL or H2
         */
        public LockClient connect() {
            JdbcDialect dialect;
            String url;
            try (Connection c = dataSource.getConnection()) {
                String product = c.getMetaData().getDatabaseProductName();
                dialect = JdbcDialect.ofProduct(product);
                url = String.valueOf(c.getMetaData().getURL());
                if (dialect == null) {
                    throw new LockBackendException(
                            null,
                            JdbcBackend.NAME,
                            "the DataSource's database is " + product
                                    + "; dlock-jdbc supports PostgreSQL, MariaDB/MySQL and H2",
                            null);
                }
            } catch (SQLException e) {
                throw new LockBackendException(
                        null,
                        JdbcBackend.NAME,
                        "cannot get a connection from the DataSource: "
                                + e.getClass().getSimpleName() + ": " + JdbcUri.redact(e.getMessage(), null),
                        null);
            }
            int q = url.indexOf('?');
            JdbcUri uri = JdbcUri.of(
                    dialect,
                    q < 0 ? url : url.substring(0, q),
                    null,
                    Map.of(
                            "dlockTable",
                            table,
                            "createTable",
                            Boolean.toString(createTable),
                            "maxConnections",
                            Integer.toString(maxConnections)),
                    options);
            return LockEngine.newClient(JdbcBackend.open(dataSource, uri), options);
        }
    }
}
