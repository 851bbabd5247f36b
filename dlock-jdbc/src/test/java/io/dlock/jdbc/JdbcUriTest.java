package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/** Parsing {@code jdbc:} URIs: dlock's parameters out, the driver's kept, bad input refused by name. */
class JdbcUriTest {

    @Test
    void parse_postgresUri_splitsDlockAndDriverParameters() {
        JdbcUri u = JdbcUri.parse(
                "jdbc:postgresql://db:5432/app?user=u&password=s3cret&leaseTime=3s"
                        + "&dlockTable=app.locks&ssl=true&maxConnections=2&fair=false",
                LockOptions.defaults());
        assertThat(u.dialect()).isEqualTo(JdbcDialect.POSTGRESQL);
        assertThat(u.jdbcUrl()).isEqualTo("jdbc:postgresql://db:5432/app?user=u&password=s3cret&ssl=true");
        assertThat(u.table()).isEqualTo("app.locks");
        assertThat(u.maxConnections()).isEqualTo(2);
        assertThat(u.options().leaseTime()).isEqualTo(Duration.ofSeconds(3));
        assertThat(u.options().fair()).isFalse();
        assertThat(u.createTable()).isFalse();
        assertThat(u.toString()).doesNotContain("s3cret");
    }

    @Test
    void parse_h2AndMariaDb_dialects() {
        assertThat(JdbcUri.parse("jdbc:h2:mem:x;DB_CLOSE_DELAY=-1?createTable=true", LockOptions.defaults()))
                .satisfies(u -> {
                    assertThat(u.dialect()).isEqualTo(JdbcDialect.H2);
                    assertThat(u.jdbcUrl()).isEqualTo("jdbc:h2:mem:x;DB_CLOSE_DELAY=-1");
                    assertThat(u.createTable()).isTrue();
                    assertThat(u.table()).isEqualTo("dlock_locks");
                });
        assertThat(JdbcUri.parse("jdbc:mariadb://h/db", LockOptions.defaults()).dialect())
                .isEqualTo(JdbcDialect.MARIADB);
        assertThat(JdbcUri.parse("jdbc:mysql://h/db", LockOptions.defaults()).dialect())
                .isEqualTo(JdbcDialect.MARIADB);
    }

    @Test
    void parse_badTableNames_refusedNamingTheParameter() {
        for (String bad : new String[] {
            "a'b",
            "locks;drop table x",
            "locks--",
            "1locks",
            "a b",
            "x.y.z",
            "\"q\"",
            "locks)",
            "a".repeat(10_000),
            "",
            // Another lock table's waiters table and indexes.
            "locks_waiters",
            "app.LOCKS_WAITERS",
            "locks_waiters_client",
            "locks_waiters_name"
        }) {
            assertThatThrownBy(() -> JdbcUri.parse(
                            "jdbc:h2:mem:x?dlockTable="
                                    + bad.replace(" ", "%20")
                                            .replace("\"", "%22")
                                            .replace("'", "%27"),
                            LockOptions.defaults()))
                    .as(bad.length() > 20 ? bad.substring(0, 20) : bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("dlockTable");
        }
    }

    @Test
    void parse_badValues_refusedNamingTheParameter() {
        assertThatThrownBy(() -> JdbcUri.parse("jdbc:h2:mem:x?leaseTime=soon", LockOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("leaseTime");
        assertThatThrownBy(() -> JdbcUri.parse("jdbc:h2:mem:x?maxConnections=0", LockOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxConnections");
        assertThatThrownBy(() -> JdbcUri.parse("jdbc:h2:mem:x?createTable=yes", LockOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("createTable");
        assertThatThrownBy(() -> JdbcUri.parse("jdbc:h2:mem:x?bogus=1", LockOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("bogus");
        assertThatThrownBy(() -> JdbcUri.parse("jdbc:oracle:thin:@h:1521:x", LockOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("jdbc:postgresql:");
    }

    @Test
    void connect_badUri_passwordNeverInTheMessage() {
        assertThatThrownBy(() -> LockClient.connect("jdbc:postgresql://127.0.0.1:1/x?password=hunter2&dlockTable=a;b"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageNotContaining("hunter2");
        assertThat(JdbcUri.redact("jdbc:postgresql://h/x?user=u&password=hunter2&ssl=true", "hunter2"))
                .isEqualTo("jdbc:postgresql://h/x?user=u&password=***&ssl=true");
    }

    @Test
    void redact_everyFormACredentialTakes_hidesThePassword() {
        JdbcUri h2 = JdbcUri.parse("jdbc:h2:mem:x;USER=sa;PASSWORD=hunter2;DB_CLOSE_DELAY=-1", LockOptions.defaults());
        assertThat(h2.password()).isEqualTo("hunter2");
        assertThat(h2.toString()).doesNotContain("hunter2").contains("PASSWORD=***");
        JdbcUri info = JdbcUri.parse("jdbc:mysql://u:hunter3@db:3306/app", LockOptions.defaults());
        assertThat(info.password()).isEqualTo("hunter3");
        assertThat(info.toString()).doesNotContain("hunter3").contains("//u:***@db:3306");
        assertThat(JdbcUri.redact("jdbc:h2:tcp://h/x;user=sa;password=pw;MODE=x", null))
                .isEqualTo("jdbc:h2:tcp://h/x;user=sa;password=***;MODE=x");
    }

    /** H2 takes its credentials as ;USER= and ;PASSWORD=, which every connect error used to echo. */
    @Test
    void connect_h2CredentialsInTheUrl_neitherPasswordInAnyMessageOrToString() throws Exception {
        String db = "jdbc:h2:mem:creds-" + System.nanoTime();
        try (LockClient owner =
                LockClient.connect(db + ";USER=sa;PASSWORD=Right-pw-1;DB_CLOSE_DELAY=-1?createTable=true")) {
            assertThat(owner.toString()).doesNotContain("Right-pw-1");
            assertThat(owner.lock("x").tryAcquire(Duration.ZERO))
                    .isPresent()
                    .get()
                    .satisfies(Lease::close);
            assertThatThrownBy(() -> LockClient.connect(db + ";USER=sa;PASSWORD=Wrong-pw-2;DB_CLOSE_DELAY=-1"))
                    .isInstanceOf(LockBackendException.class)
                    .satisfies(e -> assertThat(stackTrace(e))
                            .contains("PASSWORD=***")
                            .doesNotContain("Wrong-pw-2")
                            .doesNotContain("Right-pw-1"));
        }
    }

    private static String stackTrace(Throwable e) {
        StringWriter out = new StringWriter();
        e.printStackTrace(new PrintWriter(out));
        return out.toString();
    }

    @Test
    void ddl_shippedForEveryDialect_withTheTableName() {
        for (JdbcDialect d : JdbcDialect.values()) {
            assertThat(d.ddl("app.locks"))
                    .contains("CREATE TABLE IF NOT EXISTS app.locks (")
                    .contains("CREATE TABLE IF NOT EXISTS app.locks_waiters (")
                    .doesNotContain("dlock_locks");
            assertThat(d.ddlStatements("app.locks")).hasSizeGreaterThanOrEqualTo(2);
        }
    }

    @Test
    void parse_mode_sessionOnPostgresAndMariaDb_notOnH2_otherValuesRefusedByName() {
        assertThat(JdbcUri.parse("jdbc:postgresql://db/app?mode=session", LockOptions.defaults())
                        .sessionMode())
                .isTrue();
        assertThat(JdbcUri.parse("jdbc:postgresql://db/app?mode=lease", LockOptions.defaults())
                        .sessionMode())
                .isFalse();
        assertThat(JdbcUri.parse("jdbc:postgresql://db/app", LockOptions.defaults())
                        .sessionMode())
                .isFalse();
        assertThat(JdbcUri.parse("jdbc:mariadb://h/db?mode=session", LockOptions.defaults())
                        .sessionMode())
                .isTrue();
        assertThat(JdbcUri.parse("jdbc:mysql://h/db?mode=session", LockOptions.defaults())
                        .sessionMode())
                .isTrue();
        assertThatThrownBy(() -> JdbcUri.parse("jdbc:h2:mem:x?mode=session", LockOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("mode=session")
                .hasMessageContaining("h2");
        assertThatThrownBy(() -> JdbcUri.parse("jdbc:postgresql://db/app?mode=Session", LockOptions.defaults()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'mode'")
                .hasMessageContaining("Session");
    }
}
