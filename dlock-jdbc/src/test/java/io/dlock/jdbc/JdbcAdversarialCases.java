package io.dlock.jdbc;

import io.dlock.testkit.AdversarialContract;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The adversarial contract's hooks the SQL databases share: a lock table is their namespace, and
 * their JDBC URLs name the server as {@code 127.0.0.1:<port>/}. Each database's IT adds the URI
 * forms that carry a password.
 */
interface JdbcAdversarialCases extends AdversarialContract {
    Pattern PORT = Pattern.compile("127\\.0\\.0\\.1:(\\d+)/");

    /** The database's JDBC URL with credentials, without dlock's parameters. */
    String jdbcUrl();

    /** The test's own lock table. */
    String lockTable();

    @Override
    default String longLease() {
        return "leaseTime=20s";
    }

    /**
     * Table names that share a start. A lock table named like another's waiters table ({@code
     * adv_waiters}) is refused at connect ({@code JdbcUriTest}).
     */
    @Override
    default List<String> neighbourNamespaces() {
        return List.of("adv", "adv_x", "adv_w", "adv_waiter", "adv_x_waiters1");
    }

    @Override
    default String uriIn(String namespace, String options) {
        return uriFor(jdbcUrl(), lockTable() + "_" + namespace, options);
    }

    @Override
    default int serverPort() {
        Matcher m = PORT.matcher(jdbcUrl());
        if (!m.find()) {
            throw new IllegalStateException("no 127.0.0.1:<port>/ in " + jdbcUrl());
        }
        return Integer.parseInt(m.group(1));
    }

    @Override
    default String uriAt(int port, String options) {
        String url = jdbcUrl().replace("127.0.0.1:" + serverPort() + "/", "127.0.0.1:" + port + "/");
        return uriFor(url, lockTable(), options);
    }

    /** The URI of lock table {@code table} (created if missing) on the database at {@code jdbcUrl}. */
    private static String uriFor(String jdbcUrl, String table, String options) {
        String sep = jdbcUrl.contains("?") ? "&" : "?";
        return jdbcUrl + sep + "dlockTable=" + table + "&createTable=true" + (options.isEmpty() ? "" : "&" + options);
    }
}
