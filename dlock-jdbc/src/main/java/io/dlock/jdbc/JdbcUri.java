package io.dlock.jdbc;

import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import java.net.URI;
import java.net.URISyntaxException;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A {@code jdbc:} URI taken apart: the JDBC URL handed to the driver, and dlock's own parameters
 * ({@link BackendUri#COMMON_PARAMETERS}, {@code dlockTable}, {@code createTable}, {@code
 * maxConnections}), which are removed from it. Every other query parameter belongs to the driver
 * ({@code user}, {@code password}, {@code ssl}, …); H2 URLs take none ({@code ;KEY=value} instead).
 *
 * @param dialect the database
 * @param jdbcUrl the URL for the driver, credentials included
 * @param password the password found in the URL's query, for redaction; null if none
 * @param table the lock table, a validated identifier, optionally schema-qualified
 * @param createTable whether to create missing tables
 * @param maxConnections how many connections dlock opens for its statements (PostgreSQL: plus one
 *     for LISTEN)
 * @param sessionMode session mode ({@code mode=session}): PostgreSQL's advisory locks or MariaDB's
 *     and MySQL's {@code GET_LOCK} on a connection per held lock instead of leases in the table
 * @param options the client's options
 */
record JdbcUri(
        JdbcDialect dialect,
        String jdbcUrl,
        @Nullable String password,
        String table,
        boolean createTable,
        int maxConnections,
        boolean sessionMode,
        LockOptions options) {

    /** The default lock table. */
    static final String DEFAULT_TABLE = "dlock_locks";

    /** The default number of statement connections. */
    static final int DEFAULT_MAX_CONNECTIONS = 4;

    /** dlock's own parameters beyond the common ones. */
    static final Set<String> PARAMETERS = Set.of("dlockTable", "createTable", "maxConnections", "mode");

    /**
     * A table name: an unquoted identifier, optionally schema-qualified; short enough that {@code
     * <table>_waiters_client} stays within PostgreSQL's 63 characters.
     */
    static final Pattern TABLE = Pattern.compile("([A-Za-z_][A-Za-z0-9_]{0,39}\\.)?[A-Za-z_][A-Za-z0-9_]{0,39}");

    /** Hides the password. */
    @Override
    public String toString() {
        return "JdbcUri[" + redact(jdbcUrl, password) + ", table " + table + "]";
    }

    /** Whether {@code uri} is a {@code jdbc:} URI of a database dlock supports. */
    static boolean supports(URI uri) {
        return "jdbc".equalsIgnoreCase(uri.getScheme()) && JdbcDialect.ofUrl(uri.toString()) != null;
    }

    /**
     * Parses a {@code jdbc:} URI.
     *
     * @throws IllegalArgumentException naming the parameter for a bad dlock parameter or table name,
     *     or for a database dlock does not support
     */
    static JdbcUri parse(String uri, LockOptions base) {
        JdbcDialect dialect = JdbcDialect.ofUrl(uri);
        if (dialect == null) {
            throw new IllegalArgumentException("dlock-jdbc supports jdbc:postgresql:, jdbc:mariadb:, jdbc:mysql: and"
                    + " jdbc:h2: URIs, not '" + redact(uri, null) + "'");
        }
        int q = uri.indexOf('?');
        String head = q < 0 ? uri : uri.substring(0, q);
        String query = q < 0 ? "" : uri.substring(q + 1);
        List<String> own = new ArrayList<>();
        List<String> driver = new ArrayList<>();
        String password = passwordInHead(head);
        for (String pair : query.split("&")) {
            if (pair.isEmpty()) {
                continue;
            }
            int eq = pair.indexOf('=');
            String name = URLDecoder.decode(eq < 0 ? pair : pair.substring(0, eq), StandardCharsets.UTF_8);
            if (BackendUri.COMMON_PARAMETERS.contains(name) || PARAMETERS.contains(name)) {
                own.add(pair);
            } else {
                if (name.equals("password") && eq >= 0) {
                    password = URLDecoder.decode(pair.substring(eq + 1).replace("+", "%2B"), StandardCharsets.UTF_8);
                }
                driver.add(pair);
            }
        }
        if (dialect == JdbcDialect.H2 && !driver.isEmpty()) {
            throw new IllegalArgumentException("unknown parameter '"
                    + driver.get(0).split("=")[0]
                    + "' in dlock URI '" + redact(uri, password) + "': H2 takes its settings as ;KEY=value; dlock's"
                    + " parameters are " + new java.util.TreeSet<>(union()));
        }
        BackendUri parsed;
        try {
            parsed = BackendUri.parse(new URI("jdbc://dlock/?" + String.join("&", own)), base, PARAMETERS);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("malformed dlock parameters in '" + redact(uri, password) + "'");
        }
        return of(
                dialect,
                head + (driver.isEmpty() ? "" : "?" + String.join("&", driver)),
                password,
                parsed.parameters(),
                parsed.options());
    }

    /** Builds the record from dlock's own parameters; checks the table and the numbers. */
    static JdbcUri of(
            JdbcDialect dialect,
            String jdbcUrl,
            @Nullable String password,
            Map<String, String> params,
            LockOptions options) {
        String table = params.getOrDefault("dlockTable", DEFAULT_TABLE);
        checkTable(table);
        boolean create =
                switch (params.getOrDefault("createTable", "false")) {
                    case "true" -> true;
                    case "false" -> false;
                    default -> throw new IllegalArgumentException(
                            "parameter 'createTable' must be true or false: '" + params.get("createTable") + "'");
                };
        int max;
        try {
            max = Integer.parseInt(params.getOrDefault("maxConnections", "" + DEFAULT_MAX_CONNECTIONS)
                    .trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "parameter 'maxConnections' must be an integer: '" + params.get("maxConnections") + "'");
        }
        checkMaxConnections(max);
        boolean session =
                switch (params.getOrDefault("mode", "lease")) {
                    case "lease" -> false;
                    case "session" -> true;
                    default -> throw new IllegalArgumentException(
                            "parameter 'mode' must be lease or session: '" + params.get("mode") + "'");
                };
        if (session && dialect == JdbcDialect.H2) {
            throw new IllegalArgumentException("parameter 'mode=session' needs PostgreSQL (advisory locks) or"
                    + " MariaDB/MySQL (GET_LOCK), not " + dialect.id);
        }
        return new JdbcUri(dialect, jdbcUrl, password, table, create, max, session, options);
    }

    static void checkTable(@Nullable String table) {
        if (table == null || !TABLE.matcher(table).matches()) {
            String shown = table == null ? "null" : table.length() > 60 ? table.substring(0, 60) + "…" : table;
            throw new IllegalArgumentException("parameter 'dlockTable' must be an unquoted SQL identifier, optionally"
                    + " schema-qualified (letters, digits, '_', at most 40 characters per part, not starting with a"
                    + " digit): '" + shown + "'");
        }
        String bare = table.substring(table.indexOf('.') + 1);
        if (OWN_OBJECT.matcher(bare).matches()) {
            throw new IllegalArgumentException("parameter 'dlockTable' must not end in '_waiters', '_waiters_name' or"
                    + " '_waiters_client': those are the names of another lock table's waiters table and its"
                    + " indexes ('" + table + "')");
        }
    }

    /** The names dlock gives a lock table's waiters table and indexes: never a lock table's own. */
    private static final Pattern OWN_OBJECT = Pattern.compile("(?i).*_waiters(_name|_client)?");

    static void checkMaxConnections(int max) {
        if (max < 1 || max > 64) {
            throw new IllegalArgumentException("parameter 'maxConnections' must be within 1..64: " + max);
        }
    }

    private static Set<String> union() {
        Set<String> all = new java.util.HashSet<>(BackendUri.COMMON_PARAMETERS);
        all.addAll(PARAMETERS);
        return all;
    }

    private static final Pattern HEAD_PASSWORD = Pattern.compile("(?i);password=([^;]*)");

    private static final Pattern USER_INFO_PASSWORD = Pattern.compile("//[^/@:?;]*:([^@/?;]*)@");

    /**
     * The password written before the query: H2's {@code ;PASSWORD=} setting, or the {@code
     * user:password@} of a URL with user info (MySQL's driver takes it); null if neither.
     */
    private static @Nullable String passwordInHead(String head) {
        Matcher h2 = HEAD_PASSWORD.matcher(head);
        if (h2.find()) {
            return h2.group(1);
        }
        Matcher info = USER_INFO_PASSWORD.matcher(head);
        return info.find() ? info.group(1) : null;
    }

    /**
     * {@code text} with the password, any {@code password=} value (query or H2 setting) and the
     * password of any {@code user:password@} replaced by {@code ***}.
     */
    static @Nullable String redact(@Nullable String text, @Nullable String password) {
        if (text == null) {
            return null;
        }
        String out = text.replaceAll("(?i)(password=)[^&;\\s]*", "$1***");
        out = out.replaceAll("(//[^/@:?;\\s]*:)[^@/?;\\s]*@", "$1***@");
        if (password != null && !password.isEmpty()) {
            out = out.replace(password, "***");
        }
        return out;
    }
}
