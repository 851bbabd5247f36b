package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.core.Diagnostics;
import io.dlock.testkit.MariaDbServer;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The adversarial contract on MariaDB's session mode ({@code GET_LOCK} on a pinned connection). */
class MariaDbSessionAdversarialIT extends MariaDbTestSupport implements JdbcAdversarialCases {

    private static String session(String options) {
        return options.isEmpty() ? "mode=session" : "mode=session&" + options;
    }

    @Override
    public String uri(String query) {
        return super.uri(session(query));
    }

    @Override
    public String uriIn(String namespace, String options) {
        return JdbcAdversarialCases.super.uriIn(namespace, session(options));
    }

    @Override
    public String uriAt(int port, String options) {
        return JdbcAdversarialCases.super.uriAt(port, session(options));
    }

    @Override
    public List<String> entries(String lock) {
        return sessionEntries(lock);
    }

    /** A pinned connection per held lock: 100 of them fit the test server's 300 connections. */
    @Override
    public int manyHeldLocks() {
        return 100;
    }

    /**
     * Session mode on MariaDB offers no inspector (the server lists the waiters of user locks only
     * with the metadata_lock_info plugin), so {@code dlock init|inspect} refuse it; a SQL database
     * is durable, so there is no data-loss fence to name either. The refusal is what is checked.
     */
    @Override
    @Test
    public void freshDeployment_fenceIsNamedEverywhere_andInitMarksOnlyANewOne() throws Exception {
        try (LockClient c = LockClient.connect(uri(""))) {
            assertThat(Diagnostics.inspector(c)).isEmpty();
            try (Lease l = c.lock("first").tryAcquire(Duration.ZERO).orElseThrow()) {
                assertThat(l.isValid()).isTrue();
            }
        }
    }

    @Override
    public List<String> urisWithSecret(String secret) {
        String url = mariadb.jdbcUrl();
        String t = "&dlockTable=" + table + "&createTable=true&connectTimeout=3s&mode=session";
        return List.of(
                url + "?user=" + MariaDbServer.USER + "&password=" + secret + t,
                url + "?user=nobody&password=" + secret + t,
                "jdbc:mariadb://127.0.0.1:1/db?user=u&password=" + secret + t,
                url + "?user=" + MariaDbServer.USER + "&password=" + secret + t + "&noSuchParameter=1");
    }
}
