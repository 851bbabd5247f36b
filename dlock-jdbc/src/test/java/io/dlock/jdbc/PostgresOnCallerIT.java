package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.testkit.FaultProxy;
import io.dlock.testkit.PostgresServer;
import io.dlock.testkit.Timing;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A caller that only waits (a blocking acquire, a lease's close) runs its statement on its own
 * thread ({@link JdbcBackend#submit(JdbcBackend.Work, boolean)}); everything else stays on dlock's
 * workers. On the caller, a silent database holds it no longer than the connect timeout.
 */
class PostgresOnCallerIT extends PostgresTestSupport {

    @Test
    void aWaitingCaller_runsItsStatementItself_onAnIdleConnection_elseAWorkerDoes() throws Exception {
        JdbcBackend backend = track(JdbcBackend.open(JdbcUri.parse(uri(""), LockOptions.defaults())));
        String me = Thread.currentThread().getName();
        JdbcBackend.Work<String> where = c -> {
            try (var s = c.createStatement();
                    var rs = s.executeQuery("SELECT 1")) {
                rs.next();
            }
            return Thread.currentThread().getName();
        };
        backend.submit(where).get(10, TimeUnit.SECONDS); // leaves an idle connection
        // The worker gives its connection back just after completing the future: the first try may
        // find none idle yet, and then runs on a worker.
        await().pollInSameThread().atMost(Timing.scale(Duration.ofSeconds(5))).until(() -> backend.submit(where, true)
                .get(10, TimeUnit.SECONDS)
                .equals(me));
        assertThat(backend.submit(where, false).get(10, TimeUnit.SECONDS)).startsWith("dlock-jdbc-");
        assertThat(backend.submit(where).get(10, TimeUnit.SECONDS)).startsWith("dlock-jdbc-");
    }

    @Test
    void anApplicationsDataSource_isNeverUsedOnTheCaller() throws Exception {
        JdbcStatements sql = new JdbcStatements(JdbcDialect.POSTGRESQL, table);
        StatementGate watch = new StatementGate(sql.grant, java.util.Objects.requireNonNull(sql.releaseAlone));
        LockClient client = clientThrough(watch);
        try (Lease lease = client.lock("pool").acquire()) {
            assertThat(lease.isValid()).isTrue();
        }
        // Its getConnection may wait for the pool's own timeout: dlock's bound could not hold there.
        assertThat(watch.threads()).hasSize(2).allMatch(t -> t.startsWith("dlock-jdbc-"));
        assertThat(entries("pool")).isEmpty();
    }

    @Test
    void silentDatabase_holdsACallerNoLongerThanTheConnectTimeout_andTheReleaseIsRetriedAfter() throws Exception {
        try (FaultProxy proxy = FaultProxy.start(postgres.port())) {
            String viaProxy = "jdbc:postgresql://127.0.0.1:" + proxy.port() + "/" + PostgresServer.DATABASE
                    + "?user=" + PostgresServer.USER + "&password=" + PostgresServer.PASSWORD
                    + "&dlockTable=" + table + "&createTable=true&connectTimeout=2s&leaseTime=20s";
            LockClient client = track(LockClient.connect(viaProxy));
            Lease lease = client.lock("silent").acquire();
            proxy.blackhole(FaultProxy.Direction.BOTH);

            // The connections' own socket timeout is 30 s: only the caller's bound ends this in time.
            long start = System.nanoTime();
            lease.close();
            Duration closing = Duration.ofNanos(System.nanoTime() - start);
            assertThat(closing).isLessThan(Timing.scale(Duration.ofSeconds(5)));
            assertThat(entries("silent")).hasSize(1); // not released: the database never heard of it

            start = System.nanoTime();
            Optional<Lease> other = Optional.empty();
            try {
                other = client.lock("other").tryAcquire(Duration.ofMillis(500));
            } catch (LockBackendException expected) {
                // a failed first try is reported as such; either way the caller is back in time
            }
            Duration acquiring = Duration.ofNanos(System.nanoTime() - start);
            assertThat(other).isEmpty();
            assertThat(acquiring).isLessThan(Timing.scale(Duration.ofSeconds(5)));

            proxy.pass();
            proxy.resetConnections();
            // The release goes on in the background and reaches the database once it answers again.
            await().atMost(Timing.scale(Duration.ofSeconds(20)))
                    .untilAsserted(() -> assertThat(entries("silent")).isEmpty());
            try (Lease again =
                    client.lock("silent").tryAcquire(Duration.ofSeconds(10)).orElseThrow()) {
                assertThat(again.fencingToken()).isGreaterThan(lease.fencingToken());
            }
        }
    }
}
