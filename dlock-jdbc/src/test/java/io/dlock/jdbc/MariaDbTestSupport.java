package io.dlock.jdbc;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.MariaDbServer;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
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

    /**
     * The session that holds lock {@code lock}'s user lock ({@code IS_USED_LOCK}), then the sessions
     * blocked in {@code GET_LOCK} on it (from the process list, longest waiting first).
     */
    List<String> sessionEntries(String lock) {
        String key = PgSessionProtocol.lockName(table, lock);
        List<String> out = new ArrayList<>();
        try (Connection c = connect()) {
            long holder = 0;
            try (PreparedStatement ps = c.prepareStatement("SELECT IS_USED_LOCK(?)")) {
                ps.setString(1, key);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    holder = rs.getLong(1);
                    if (!rs.wasNull()) {
                        out.add("id " + holder + " holds");
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT ID FROM information_schema.PROCESSLIST"
                    + " WHERE INFO LIKE ? AND ID <> CONNECTION_ID() AND ID <> ? ORDER BY TIME_MS DESC")) {
                ps.setString(1, "SELECT GET_LOCK('" + key + "', 3%");
                ps.setLong(2, holder);
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add("id " + rs.getLong(1) + " waits");
                    }
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
        return out;
    }
}
