package io.dlock.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import org.jspecify.annotations.Nullable;

/**
 * What differs between the databases: the DDL, the database clock in milliseconds, and how a grant
 * is written as one statement that reports whether it took the row and which token it wrote.
 *
 * <p>The DDL is shipped as resources ({@code io/dlock/jdbc/ddl-<dialect>.sql}, with {@code
 * dlock_locks} as the table name) and printed in the README.
 */
enum JdbcDialect {
    /** PostgreSQL: an upsert with RETURNING, LISTEN/NOTIFY for wake-ups. */
    POSTGRESQL("postgresql", "(EXTRACT(EPOCH FROM now()) * 1000)::bigint"),
    /**
     * MariaDB and MySQL: a conditional UPDATE whose token comes back through LAST_INSERT_ID. The
     * clock is UTC arithmetic, not {@code UNIX_TIMESTAMP(NOW())}, which reads the session's time
     * zone and repeats an hour when daylight saving time ends.
     */
    MARIADB("mariadb", "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)"),
    /** H2: a conditional UPDATE read back through FINAL TABLE. */
    H2("h2", "CAST(EXTRACT(EPOCH FROM CURRENT_TIMESTAMP) * 1000 AS BIGINT)");

    /** The resource and README name. */
    final String id;

    /**
     * The database's clock in epoch milliseconds. Every expiry is written and compared with it;
     * the client's clock never enters a statement. PostgreSQL's {@code now()} is the statement's
     * start in autocommit: a statement that waited for a row lock judges expiry by an earlier
     * instant and writes an earlier expiry, both on the safe side.
     */
    final String now;

    JdbcDialect(String id, String now) {
        this.id = id;
        this.now = now;
    }

    /** The dialect of a JDBC URL's subprotocol ({@code jdbc:postgresql:…}), or null. */
    static @Nullable JdbcDialect ofUrl(String jdbcUrl) {
        String s = jdbcUrl.toLowerCase(Locale.ROOT);
        if (s.startsWith("jdbc:postgresql:")) {
            return POSTGRESQL;
        }
        if (s.startsWith("jdbc:mariadb:") || s.startsWith("jdbc:mysql:")) {
            return MARIADB;
        }
        if (s.startsWith("jdbc:h2:")) {
            return H2;
        }
        return null;
    }

    /** The dialect of a connection's database product name, or null. */
    static @Nullable JdbcDialect ofProduct(String product) {
        String p = product.toLowerCase(Locale.ROOT);
        if (p.contains("postgres")) {
            return POSTGRESQL;
        }
        if (p.contains("mariadb") || p.contains("mysql")) {
            return MARIADB;
        }
        if (p.equals("h2")) {
            return H2;
        }
        return null;
    }

    /** The DDL for lock table {@code table} (its waiters table is {@code table_waiters}). */
    String ddl(String table) {
        String text;
        try (InputStream in = JdbcDialect.class.getResourceAsStream("ddl-" + id + ".sql")) {
            if (in == null) {
                throw new IllegalStateException("dlock-jdbc jar is missing io/dlock/jdbc/ddl-" + id + ".sql");
            }
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String bare = table.substring(table.lastIndexOf('.') + 1);
        // Index names are unqualified (they live in the table's schema): replace those first.
        return text.replace("dlock_locks_waiters_", bare + "_waiters_").replace("dlock_locks", table);
    }

    /** The statements of the DDL, split at semicolons that end a line; comments dropped. */
    java.util.List<String> ddlStatements(String table) {
        java.util.List<String> out = new java.util.ArrayList<>();
        StringBuilder sb = new StringBuilder();
        for (String line : ddl(table).split("\n")) {
            String t = line.strip();
            if (t.startsWith("--") || t.isEmpty()) {
                continue;
            }
            sb.append(line).append('\n');
            if (t.endsWith(";")) {
                out.add(sb.toString().strip().replaceAll(";$", ""));
                sb.setLength(0);
            }
        }
        return out;
    }
}
