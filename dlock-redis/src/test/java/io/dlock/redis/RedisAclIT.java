package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.DistributedReadWriteLock;
import io.dlock.DistributedSemaphore;
import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.testkit.RedisServer;
import io.dlock.testkit.Timing;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * dlock as an ACL user with the smallest rule set it needs, exactly as the README documents it:
 * every primitive, waiting with a wake-up, renewal and a reconnect work, and the server's ACL log
 * shows nothing refused; without one needed command, the error names it.
 */
class RedisAclIT {
    /** The README's line, for the default key prefix {@code dlock}. */
    static final String ACL_RULE = "~dlock:* &dlock:c:* -@all +evalsha +eval +hget +subscribe +time +zadd +zrange"
            + " +zrangebyscore +zrank +zrem +zcard +zscore +hset +hmget +hdel +hincrby +del +pexpire +publish +exists"
            + " +wait +get +set +pttl";

    static RedisServer server;
    private String base;

    @BeforeAll
    static void startServer() {
        server = RedisServer.builder()
                .config("user default on >admin ~* &* +@all")
                .config("user dlock on >s3cret " + ACL_RULE)
                .config("user dlockdb on >s3cret " + ACL_RULE + " +select")
                .config("user no-evalsha on >pw " + without("+evalsha"))
                .config("user no-eval on >pw " + without("+eval"))
                .config("user no-set on >pw " + without("+set"))
                .config("user no-subscribe on >pw " + without("+subscribe"))
                .probePassword("admin")
                .start();
    }

    @AfterAll
    static void stopServer() {
        server.close();
    }

    @BeforeEach
    void resetAclLog() {
        server.command("ACL", "LOG", "RESET");
        base = "127.0.0.1:" + server.port();
        RedisTestSupport.markContinuous(server, "dlock");
        RedisTestSupport.markContinuous(server, "dlock", 2);
    }

    @AfterEach
    void nothingLeft() {
        assertThat(RedisTestSupport.lockKeys(server, "dlock:*")).isEmpty();
    }

    private static String without(String command) {
        String rule = (ACL_RULE + " ").replace(" " + command + " ", " ").trim();
        assertThat(rule).isNotEqualTo(ACL_RULE);
        return rule;
    }

    private LockClient connect(String query) {
        return LockClient.connect("redis://dlock:s3cret@" + base + (query.isEmpty() ? "" : "?" + query));
    }

    /** The server refused nothing: not even a command whose failure dlock would only log. */
    private static void assertNothingRefused() {
        assertThat((List<?>) server.command("ACL", "LOG")).isEmpty();
    }

    @Test
    void aclRule_isTheOneInTheReadmeAndTheErrorHint() throws Exception {
        assertThat(ACL_RULE).isEqualTo("~dlock:* &dlock:c:* " + RedisConnector.ACL_COMMANDS);
        assertThat(Files.readString(Path.of("README.md"))).contains("user dlock on >password " + ACL_RULE);
    }

    @Test
    void exclusive_minimalAcl_excludesAndFences() throws Exception {
        try (LockClient a = connect("");
                LockClient b = connect("")) {
            long first;
            try (Lease lease = a.lock("x").acquire()) {
                first = lease.fencingToken();
                assertThat(b.lock("x").tryAcquire(Duration.ZERO)).isEmpty();
            }
            try (Lease lease = b.lock("x").tryAcquire(Duration.ZERO).orElseThrow()) {
                assertThat(lease.fencingToken()).isGreaterThan(first);
            }
        }
        assertNothingRefused();
    }

    @Test
    void fairWait_minimalAcl_waiterWokenByReleaseNotByTimer() throws Exception {
        try (LockClient a = connect("leaseTime=30s");
                LockClient b = connect("leaseTime=30s")) {
            Lease held = a.lock("fair").acquire();
            CompletableFuture<Lease> waiter = b.lock("fair").acquireAsync(Duration.ofMinutes(1));
            await().atMost(scaled(5))
                    .until(() -> ((List<?>) RedisTestSupport.queue(server, "dlock:{fair}:x")).size() == 2);
            long published = commandCalls("publish");
            held.close();
            // The waiter's own timer would fire only after leaseTime / 3 = 10 s: this is the wake-up.
            Lease next = waiter.get(5, TimeUnit.SECONDS);
            assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
            assertThat(commandCalls("publish")).isEqualTo(published + 1);
            next.close();
        }
        assertNothingRefused();
    }

    @Test
    void readWrite_minimalAcl_readersShareWriterWaits() throws Exception {
        try (LockClient a = connect("");
                LockClient b = connect("");
                LockClient c = connect("")) {
            Lease r1 = a.readWriteLock("rw").readLock().acquire();
            Lease r2 =
                    b.readWriteLock("rw").readLock().tryAcquire(Duration.ZERO).orElseThrow();
            DistributedReadWriteLock rwC = c.readWriteLock("rw");
            assertThat(rwC.writeLock().tryAcquire(Duration.ZERO)).isEmpty();
            CompletableFuture<Lease> writer = rwC.writeLock().acquireAsync(Duration.ofMinutes(1));
            r1.close();
            assertThat(writer).isNotDone();
            r2.close();
            Lease w = writer.get(5, TimeUnit.SECONDS);
            assertThat(w.fencingToken()).isGreaterThan(Math.max(r1.fencingToken(), r2.fencingToken()));
            assertThat(a.readWriteLock("rw").readLock().tryAcquire(Duration.ZERO))
                    .isEmpty();
            w.close();
        }
        assertNothingRefused();
    }

    @Test
    void semaphore_minimalAcl_countsPermitsAndWakesWaiter() throws Exception {
        ExecutorService waiterThread = Executors.newSingleThreadExecutor(); // owns the waiter's lease
        try (LockClient a = connect("");
                LockClient b = connect("")) {
            DistributedSemaphore semA = a.semaphore("pool", 3);
            DistributedSemaphore semB = b.semaphore("pool", 3);
            Lease two = semA.acquire(2);
            Lease one = semB.tryAcquire(1, Duration.ZERO).orElseThrow();
            assertThat(semB.tryAcquire(1, Duration.ZERO)).isEmpty();
            Future<Lease> waiting = waiterThread.submit(
                    () -> semB.tryAcquire(2, Duration.ofSeconds(30)).orElseThrow());
            await().atMost(scaled(5))
                    .until(() -> ((List<?>) RedisTestSupport.queue(server, "dlock:{pool}:s")).size() == 3);
            two.close();
            Lease later = waiting.get(5, TimeUnit.SECONDS);
            assertThat(later.isValid()).isTrue();
            assertThat(semA.tryAcquire(1, Duration.ZERO)).isEmpty(); // 1 + 2 of 3 permits are out
            one.close();
            waiterThread.submit(later::close).get(5, TimeUnit.SECONDS);
        } finally {
            waiterThread.shutdownNow();
        }
        assertNothingRefused();
    }

    @Test
    void renewal_minimalAcl_leaseHeldForThreeLeaseTimes() throws Exception {
        try (LockClient a = connect("leaseTime=1s");
                LockClient b = connect("leaseTime=1s")) {
            Lease held = a.lock("renewed").acquire();
            AtomicInteger lost = new AtomicInteger();
            held.onLost(e -> lost.incrementAndGet());
            long renewalsBefore = commandCalls("evalsha");
            await().during(Duration.ofSeconds(3))
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> held.isValid() && lost.get() == 0);
            assertThat(b.lock("renewed").tryAcquire(Duration.ZERO)).isEmpty();
            assertThat(commandCalls("evalsha")).isGreaterThanOrEqualTo(renewalsBefore + 6); // every 333 ms
            held.close();
        }
        assertNothingRefused();
    }

    @Test
    void reconnect_minimalAcl_connectionsKilled_grantKeptAndWakeUpsWork() throws Exception {
        try (LockClient a = connect("leaseTime=30s");
                LockClient b = connect("leaseTime=30s")) {
            Lease held = a.lock("re").acquire();
            AtomicInteger lost = new AtomicInteger();
            held.onLost(e -> lost.incrementAndGet());
            assertThat(dlockConnections()).isEqualTo(4); // commands + wake-ups, per client
            assertThat((Long) server.command("CLIENT", "KILL", "USER", "dlock")).isEqualTo(4L);
            // Lettuce reconnects: HELLO with AUTH and SETNAME, SUBSCRIBE again, then the grant check.
            await().atMost(scaled(10)).until(() -> dlockConnections() == 4);
            await().during(Duration.ofSeconds(1)).atMost(scaled(5)).until(() -> held.isValid() && lost.get() == 0);
            CompletableFuture<Lease> waiter = b.lock("re").acquireAsync(Duration.ofMinutes(1));
            await().atMost(scaled(5))
                    .until(() -> ((List<?>) RedisTestSupport.queue(server, "dlock:{re}:x")).size() == 2);
            held.close();
            waiter.get(5, TimeUnit.SECONDS).close(); // woken on b's resubscribed channel
        }
        assertNothingRefused();
    }

    @Test
    void connect_databaseOtherThanZero_needsSelect() throws Exception {
        assertThatThrownBy(() -> LockClient.connect("redis://dlock:s3cret@" + base + "/2?connectTimeout=2s"))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("'select'");
        try (LockClient c = LockClient.connect("redis://dlockdb:s3cret@" + base + "/2");
                Lease lease = c.lock("db2").acquire()) {
            assertThat(lease.fencingToken()).isPositive();
        }
    }

    @ParameterizedTest
    @CsvSource({
        "no-evalsha,   'evalsha'",
        "no-set,       may not run 'set'",
        "no-eval,      'eval'",
    })
    void acquire_userLackingCommand_failsNamingIt(String user, String named) throws Exception {
        if (user.equals("no-eval")) {
            server.command("SCRIPT", "FLUSH"); // EVAL runs when the server does not know the script
        }
        String lock = "refused-" + user;
        try (LockClient c = LockClient.connect("redis://" + user + ":pw@" + base)) {
            assertThatThrownBy(() -> c.lock(lock).tryAcquire(Duration.ZERO))
                    .isInstanceOf(LockBackendException.class)
                    .hasMessageContaining("lock '" + lock + "' on redis")
                    .hasMessageContaining(named)
                    .hasMessageContaining("dlock's user needs: " + ACL_RULE);
        }
        assertThat(server.command("ACL", "LOG").toString()).contains("username, " + user);
        // The fast path writes once, last (SET with PX): a refused command leaves nothing behind.
        assertThat((List<?>) server.command("KEYS", "dlock:{" + lock + "}*")).isEmpty();
    }

    @Test
    void connect_userLackingSubscribe_failsNamingIt() {
        assertThatThrownBy(() -> LockClient.connect("redis://no-subscribe:pw@" + base))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining("permission denied")
                .hasMessageContaining("'subscribe'")
                .hasMessageContaining("dlock's user needs: " + ACL_RULE);
        assertThat(dlockConnections()).isZero();
    }

    private static long dlockConnections() {
        String list = (String) server.command("CLIENT", "LIST");
        return list.lines().filter(l -> l.contains(" name=dlock:")).count();
    }

    private static long commandCalls(String command) {
        String info = (String) server.command("INFO", "commandstats");
        Matcher m = Pattern.compile("cmdstat_" + command + ":calls=(\\d+)").matcher(info);
        return m.find() ? Long.parseLong(m.group(1)) : 0;
    }

    private static Duration scaled(long seconds) {
        return Timing.scale(Duration.ofSeconds(seconds));
    }
}
