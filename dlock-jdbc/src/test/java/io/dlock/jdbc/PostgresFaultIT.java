package io.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.testkit.ChildJvm;
import io.dlock.testkit.FreePorts;
import io.dlock.testkit.LockWorker;
import io.dlock.testkit.PostgresServer;
import io.dlock.testkit.Timing;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * What is PostgreSQL's own: bad input and credentials, a missing table, the database clock deciding,
 * renewal, a restart under a held lock, an exhausted pool, the fenced-write helper against a paused
 * holder, and rows that do not grow.
 */
class PostgresFaultIT extends PostgresTestSupport {

    @Test
    void connect_wrongPassword_clearErrorWithoutThePassword() {
        String uri = postgres.jdbcUrl() + "?user=dlock&password=wrong-pw-123&dlockTable=" + table;
        assertThatThrownBy(() -> LockClient.connect(uri))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("password authentication failed")
                .hasMessageNotContaining("wrong-pw-123");
    }

    @Test
    void connect_unreachable_clearError() {
        String uri = "jdbc:postgresql://127.0.0.1:" + FreePorts.loopback() + "/dlock?user=dlock&password=pw"
                + "&connectTimeout=2s";
        assertThatThrownBy(() -> LockClient.connect(uri))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("cannot use jdbc:postgresql://127.0.0.1:")
                .hasMessageNotContaining("password=pw");
    }

    @Test
    void connect_missingTable_errorPrintsTheDdlAndCreatesNothing() throws Exception {
        String uri = jdbcUrl() + "&dlockTable=" + table;
        assertThatThrownBy(() -> LockClient.connect(uri))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("does not exist")
                .hasMessageContaining("CREATE TABLE IF NOT EXISTS " + table + " (")
                .hasMessageContaining("createTable=true");
        assertThat(queryLong("SELECT count(*) FROM pg_tables WHERE tablename LIKE '" + table + "%'"))
                .isZero();
    }

    @Test
    void lock_badNames_refusedAndNothingWritten() throws Exception {
        LockClient client = client();
        for (String bad : new String[] {"a'b", "x; DROP TABLE " + table, "1=1 --", "a".repeat(10_000), "", "a b"}) {
            assertThatThrownBy(() -> client.lock(bad)).isInstanceOf(IllegalArgumentException.class);
        }
        assertThat(queryLong("SELECT count(*) FROM " + table)).isZero();
    }

    @Test
    void renewal_keepsTheLockForThreeLeaseTimes() throws Exception {
        LockClient holder = client("leaseTime=1s");
        LockClient other = client();
        Lease lease = holder.lock("renewed").acquire();
        long until = System.nanoTime() + Timing.scale(Duration.ofMillis(3_300)).toNanos();
        while (System.nanoTime() - until < 0) {
            assertThat(other.lock("renewed").tryAcquire(Duration.ofMillis(200))).isEmpty();
            assertThat(lease.isValid()).isTrue();
        }
        assertThat(queryLong("SELECT token FROM " + table + " WHERE name = 'renewed'") << 10)
                .isEqualTo(lease.fencingToken());
        lease.close();
    }

    @Test
    void databaseClock_decides_skewedTickerNeitherStealsNorKeeps() throws Exception {
        // A ticker running at a tenth of real speed: without renewal, this client believes its
        // 1-second lease lasts 10 seconds. The database gives the lock away after 1 second anyway.
        long start = System.nanoTime();
        LockOptions slow = LockOptions.builder()
                .leaseTime(Duration.ofSeconds(1))
                .renewal(false)
                .ticker(() -> start + (System.nanoTime() - start) / 10)
                .build();
        LockClient slowClient = track(LockClient.connect(uri(""), slow));
        // A ticker running ten times fast: it may not take a held lock either.
        LockOptions fast = LockOptions.builder()
                .ticker(() -> start + (System.nanoTime() - start) * 10)
                .build();
        LockClient fastClient = track(LockClient.connect(uri(""), fast));
        LockClient honest = client();

        Lease slowLease = slowClient.lock("clock").acquire();
        assertThat(fastClient.lock("clock").tryAcquire(Duration.ZERO)).isEmpty();
        long t0 = System.nanoTime();
        Lease next = honest.lock("clock").tryAcquire(scaled(10)).orElseThrow();
        long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertThat(waitedMs)
                .as("the database expired the 1 s lease")
                .isLessThan(Timing.scale(Duration.ofMillis(2_500)).toMillis());
        assertThat(slowLease.isValid())
                .as("the slow client still believes it holds")
                .isTrue();
        assertThat(next.fencingToken()).isGreaterThan(slowLease.fencingToken());
        slowLease.close(); // releases nothing: the row is no longer its own
        assertThat(entries("clock")).hasSize(1);
        assertThat(fastClient.lock("clock").tryAcquire(Duration.ZERO)).isEmpty();
        next.close();
    }

    @Test
    void poolExhaustedByTheApplication_clearTimeoutNotAHang() throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(postgres.jdbcUrl());
        config.setUsername(PostgresServer.USER);
        config.setPassword(PostgresServer.PASSWORD);
        config.setMaximumPoolSize(3);
        config.setConnectionTimeout(500);
        HikariDataSource pool = track(new HikariDataSource(config));
        LockClient client = track(JdbcLocks.builder(pool)
                .table(table)
                .createTable(true)
                .maxConnections(2)
                .options(LockOptions.defaults())
                .connect());
        // The LISTEN connection is one; the application takes the other two.
        List<Connection> taken = new ArrayList<>();
        taken.add(pool.getConnection());
        taken.add(pool.getConnection());
        try {
            long t0 = System.nanoTime();
            assertThatThrownBy(() -> client.lock("starved").tryAcquire(Duration.ofSeconds(30)))
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("lock 'starved'")
                    .hasMessageContaining("pool exhausted");
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0))
                    .isLessThan(scaled(10).toMillis());
        } finally {
            for (Connection c : taken) {
                c.close();
            }
        }
        try (Lease lease = client.lock("starved").acquire()) {
            assertThat(lease.isValid()).isTrue();
        }
    }

    @Test
    void fencedWrite_pausedHolderLateWrite_refusedByTheDatabase() throws Exception {
        FencedWrites fence = FencedWrites.of(table + "_fence");
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            fence.createTable(c);
            s.execute("CREATE TABLE " + table + "_stock (id INT PRIMARY KEY, qty INT NOT NULL)");
            s.execute("INSERT INTO " + table + "_stock VALUES (42, 1)");
        }
        LockClient next = client();
        try (ChildJvm holder = ChildJvm.start(LockWorker.class, List.of("hold", uri("leaseTime=1s"), "stock-42"))) {
            long paused = Long.parseLong(holder.awaitLine("HOLDING", scaled(30)).split(" ")[1]);
            holder.pause(); // a GC pause: no renewal reaches the database any more
            try (Lease lease = next.lock("stock-42").tryAcquire(scaled(10)).orElseThrow()) {
                assertThat(lease.fencingToken()).isGreaterThan(paused);
                assertThat(sell(fence, lease.fencingToken())).isTrue();
            }
            // The paused holder wakes up and makes the write it was about to make, with its token.
            holder.resume();
            assertThat(sell(fence, paused)).isFalse();
            holder.kill();
        }
        assertThat(queryLong("SELECT qty FROM " + table + "_stock WHERE id = 42"))
                .isZero(); // sold once, not twice
    }

    @Test
    void databaseClock_isEpochMillisWithoutTimeZoneOffset() throws Exception {
        checkDatabaseClockIsEpochMillis(JdbcDialect.POSTGRESQL);
    }

    @Test
    void fencedWrite_olderTokenRefused_sameTokenAccepted() throws Exception {
        checkFencedWrites();
    }

    @Test
    void manyCycles_overManyNames_rowsStayBounded() throws Exception {
        LockClient a = client();
        LockClient b = client();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        AtomicInteger cycles = new AtomicInteger();
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 4; t++) {
                LockClient c = t % 2 == 0 ? a : b;
                int offset = t;
                done.add(pool.submit(() -> {
                    for (int i = 0; i < 2_500; i++) {
                        try (Lease l = c.lock("n" + ((i * 4 + offset) % 1_000)).acquire()) {
                            cycles.incrementAndGet();
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(5, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(cycles).hasValue(10_000);
        assertThat(queryLong("SELECT count(*) FROM " + table)).isEqualTo(1_000);
        assertThat(queryLong("SELECT count(*) FROM " + table + "_waiters")).isZero();
        assertThat(queryLong("SELECT count(*) FROM " + table + " WHERE owner IS NOT NULL"))
                .isZero();
    }

    @Test
    void release_wakesAWaiterOfAnotherClientByNotify_notByItsPoll() throws Exception {
        LockClient holder = client();
        LockClient waiter = client();
        Lease held = holder.lock("notify").acquire();
        var pending = waiter.lock("notify").acquireAsync(Duration.ofMinutes(1));
        await().atMost(scaled(10)).until(() -> entries("notify").size() == 2);
        // Let the waiter's poll back off to its PostgreSQL interval (a third of the 30 s lease).
        await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(4)).until(() -> !pending.isDone());
        long t0 = System.nanoTime();
        held.close();
        Lease next = pending.get(10, TimeUnit.SECONDS);
        long handOffMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        assertThat(handOffMs)
                .as("hand-off through NOTIFY")
                .isLessThan(Timing.scale(Duration.ofMillis(500)).toMillis());
        next.close();
    }

    /**
     * The waiter's LISTEN connection goes silent (a NAT dropped its idle flow: the old flow passes
     * nothing and ends with no FIN or RST, new connections work). The listener's probe must find it
     * within connectTimeout (2 s here) + its 0.5 s wait, reconnect on a new flow, and hand-offs to
     * that client be fast again, not left to the poll (a third of its 30 s lease): under 2 s, far
     * from the poll's 10 s, with room for a loaded machine (566 ms was seen at a load of 11).
     */
    @Test
    void listenConnectionGoesSilent_foundWithinConnectTimeout_handOffsFastAgain() throws Exception {
        LockClient holder = client();
        try (io.dlock.testkit.FaultProxy proxy = io.dlock.testkit.FaultProxy.start(postgres.port())) {
            String viaProxy = jdbcUrl().replace(":" + postgres.port() + "/", ":" + proxy.port() + "/");
            assertThat(viaProxy).isNotEqualTo(jdbcUrl());
            // Without a pool: every statement opens a new connection (a new flow), so the LISTEN
            // connection is the one long-lived flow, as a pool's idle connections would be refreshed.
            javax.sql.DataSource ds =
                    new StatementGate("-- none").dataSource(() -> java.sql.DriverManager.getConnection(viaProxy));
            LockClient waiter = track(JdbcLocks.builder(ds)
                    .table(table)
                    .createTable(true)
                    .options(LockOptions.builder()
                            .leaseTime(Duration.ofSeconds(30))
                            .connectTimeout(Duration.ofSeconds(2))
                            .build())
                    .connect());
            assertThat(handOffMs(holder, waiter, "silent-1"))
                    .as("hand-off before")
                    .isLessThan(scaledMs(2_000));
            assertThat(proxy.silenceConnections())
                    .as("open flows silenced (the LISTEN one)")
                    .isGreaterThanOrEqualTo(1);
            // connectTimeout (2 s) + the listener's 0.5 s wait + a reconnect: the LISTEN session is back.
            Thread.sleep(scaledMs(4_000));
            long after = handOffMs(holder, waiter, "silent-2");
            assertThat(after)
                    .as(
                            "hand-off %d ms after the LISTEN flow went silent (the poll would take seconds)",
                            scaledMs(4_000))
                    .isLessThan(scaledMs(2_000));
        }
    }

    /** Holder takes the lock, the waiter queues and waits 3 s (its poll backs off), then the release: ms to the grant. */
    private long handOffMs(LockClient holder, LockClient waiter, String name) throws Exception {
        Lease held = holder.lock(name).acquire();
        var pending = waiter.lock(name).acquireAsync(Duration.ofMinutes(1));
        await().atMost(scaled(10)).until(() -> entries(name).size() == 2);
        await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(4)).until(() -> !pending.isDone());
        long t0 = System.nanoTime();
        held.close();
        Lease next = pending.get(20, TimeUnit.SECONDS);
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        next.close();
        return ms;
    }

    private static long scaledMs(long ms) {
        return Timing.scale(Duration.ofMillis(ms)).toMillis();
    }

    @Test
    void acquire_fourClientsEveryWaiterInTheTable_counterExact() throws Exception {
        // Every waiter stands in the waiters table and is polled and notified: a poll answered from
        // before a waiter's row existed once declared that waiter lost, and its enqueue again hit
        // the row's unique key.
        LockClient[] clients = new LockClient[4];
        for (int i = 0; i < clients.length; i++) {
            clients[i] = client("localQueueing=false");
        }
        io.dlock.testkit.Contention.Result r =
                io.dlock.testkit.Contention.run(clients, "queue", 8, 40, Duration.ofMinutes(2));
        assertThat(r.checker().counter()).isEqualTo(320);
        assertThat(r.checker().violations()).isZero();
        assertThat(r.store().rejectedWrites()).isZero();
        assertThat(entries("queue")).isEmpty();
    }

    @Test
    void close_removesThisClientsWaiterRows() throws Exception {
        LockClient holder = client();
        LockClient waiter = LockClient.connect(uri("localQueueing=false"));
        Lease held = holder.lock("w").acquire();
        var pending = waiter.lock("w").acquireAsync(Duration.ofMinutes(1));
        await().atMost(scaled(10)).until(() -> entries("w").size() == 2);
        waiter.close();
        assertThat(pending).isCompletedExceptionally();
        assertThat(entries("w")).hasSize(1);
        held.close();
    }

    @Test
    void tryAcquire_zeroWaitWhileHeld_writesNoWaiterRow() throws Exception {
        checkZeroWaitWritesNothing();
    }

    @Test
    void readRelease_wakesAWriterOfAnotherClientByNotify_notByItsPoll() throws Exception {
        LockClient reader = client();
        LockClient writer = client();
        Lease read = reader.readWriteLock("rw-notify").readLock().acquire();
        var pending = writer.readWriteLock("rw-notify").writeLock().acquireAsync(Duration.ofMinutes(1));
        await().atMost(scaled(10)).until(() -> readWriteEntries("rw-notify").size() == 2);
        // Let the writer's poll back off to its PostgreSQL interval (a third of the 30 s lease).
        await().during(Duration.ofSeconds(3)).atMost(Duration.ofSeconds(4)).until(() -> !pending.isDone());
        long t0 = System.nanoTime();
        read.close();
        Lease write = pending.get(10, TimeUnit.SECONDS);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0))
                .as("hand-off through NOTIFY, not the poll 10 s apart")
                .isLessThan(Timing.scale(Duration.ofSeconds(3)).toMillis());
        assertThat(write.fencingToken()).isGreaterThan(read.fencingToken());
        write.close();
        assertThat(readWriteEntries("rw-notify")).isEmpty();
    }
}
