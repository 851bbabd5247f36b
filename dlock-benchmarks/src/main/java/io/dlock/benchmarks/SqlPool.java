package io.dlock.benchmarks;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import javax.sql.DataSource;
import org.springframework.integration.jdbc.lock.DefaultLockRepository;

/**
 * The connection pool of the SQL anchors and the SQL floor: HikariCP, as their users run them; and
 * Spring Integration's lock table.
 *
 * <p>Thread-safety: stateless.
 */
public final class SqlPool {
    private SqlPool() {}

    /**
     * A pool of at most {@code size} connections to {@code jdbcUrl} (credentials in its query).
     *
     * <p>Blocking: until one connection is open. On failure: HikariCP's exception.
     */
    public static HikariDataSource open(String jdbcUrl, int size, String name) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl);
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(1);
        config.setPoolName(name);
        config.setAutoCommit(true);
        return new HikariDataSource(config);
    }

    /** Whether the URL is MariaDB's or MySQL's (else PostgreSQL's). */
    public static boolean mariadb(String jdbcUrl) {
        return jdbcUrl.startsWith("jdbc:mariadb:") || jdbcUrl.startsWith("jdbc:mysql:");
    }

    /**
     * Creates Spring Integration's {@code INT_LOCK} table, from the DDL it ships for the database,
     * unless it exists (a racing worker may create it at the same moment).
     *
     * <p>Blocking: one statement. On failure: {@link IllegalStateException} with the cause.
     *
     * @param pool where
     * @param jdbcUrl its URL, to choose the DDL (MariaDB/MySQL or PostgreSQL)
     */
    public static void createSpringLockTable(DataSource pool, String jdbcUrl) {
        String path =
                "org/springframework/integration/jdbc/schema-" + (mariadb(jdbcUrl) ? "mysql" : "postgresql") + ".sql";
        String ddl;
        try (InputStream in = DefaultLockRepository.class.getClassLoader().getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("spring-integration-jdbc has no " + path);
            }
            ddl = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        int start = ddl.indexOf("CREATE TABLE INT_LOCK");
        int end = ddl.indexOf(';', start);
        String create =
                ddl.substring(start, end).replace("CREATE TABLE INT_LOCK", "CREATE TABLE IF NOT EXISTS INT_LOCK");
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            s.execute(create);
        } catch (SQLException e) {
            if (!String.valueOf(e.getSQLState()).startsWith("23")
                    && !String.valueOf(e.getSQLState()).equals("42P07")) {
                throw new IllegalStateException("cannot create INT_LOCK: " + e, e); // else: a racing worker made it
            }
        }
    }
}
