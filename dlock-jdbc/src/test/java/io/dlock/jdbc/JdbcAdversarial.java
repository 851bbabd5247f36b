package io.dlock.jdbc;

import java.util.List;

/** What the SQL backends' {@code *AdversarialIT} classes share: a lock table is their namespace. */
final class JdbcAdversarial {
    private JdbcAdversarial() {}

    /**
     * Table names that share a start. A lock table named like another's waiters table ({@code
     * adv_waiters}) is refused at connect ({@code JdbcUriTest}).
     */
    static final List<String> TABLES = List.of("adv", "adv_x", "adv_w", "adv_waiter", "adv_x_waiters1");

    /** The URI of lock table {@code table} (created if missing) on the database at {@code jdbcUrl}. */
    static String uriIn(String jdbcUrl, String table, String options) {
        String sep = jdbcUrl.contains("?") ? "&" : "?";
        return jdbcUrl + sep + "dlockTable=" + table + "&createTable=true" + (options.isEmpty() ? "" : "&" + options);
    }
}
