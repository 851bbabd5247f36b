package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.testkit.DlockServer;
import io.dlock.testkit.LockFixtureSupport;
import io.dlock.testkit.RedisServer;
import io.dlock.testkit.Timing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/**
 * One redis-server per test class; a fresh key prefix and fresh clients per test. After each test
 * every client is closed and the server must hold no key under the test's prefix: whatever dlock
 * creates, it removes.
 */
@DlockServer(DlockServer.Kind.REDIS)
abstract class RedisTestSupport extends LockFixtureSupport {
    static RedisServer server;

    String prefix;

    @BeforeAll
    static void server(RedisServer started) {
        server = started;
    }

    @BeforeEach
    void newPrefix(TestInfo info) {
        prefix = "t-" + info.getTestMethod().orElseThrow().getName();
        markContinuous(server, prefix);
    }

    /**
     * Writes the epoch marker of {@code prefix} on a standalone server, as a first grant would once
     * its fence had passed: a test server is known never to have granted anything under a fresh
     * prefix, so its first acquire need not wait a lease time (see RedisScripts).
     */
    static void markContinuous(RedisServer on, String prefix) {
        markContinuous(on, prefix, 0);
    }

    /** As {@link #markContinuous(RedisServer, String)}, in database {@code db}. */
    static void markContinuous(RedisServer on, String prefix, int db) {
        on.command(
                "EVAL",
                "redis.call('SELECT', ARGV[1]) return redis.call('SET', KEYS[1], '=0')",
                "1",
                RedisLockProtocol.serverEpochKey(prefix),
                Integer.toString(db));
    }

    /** The keys on {@code on} that match {@code pattern}, except epoch markers, which stay by design. */
    @SuppressWarnings("unchecked")
    static List<String> lockKeys(RedisServer on, String pattern) {
        return ((List<String>) on.command("KEYS", pattern))
                .stream().filter(k -> !k.endsWith(":epoch")).toList();
    }

    @AfterEach
    void closeClientsAndCheckClean() throws Exception {
        closeTracked();
        if (server.isAlive()) {
            assertThat(keys()).as("keys left under prefix %s", prefix).isEmpty();
        }
    }

    @Override
    public String backendName() {
        return "redis";
    }

    @Override
    public String shortLease() {
        return "leaseTime=2s";
    }

    @Override
    public Duration crashReleaseBound() {
        // The dead holder's lease (2 s) runs out; the waiter checks right after its deadline.
        return Duration.ofSeconds(5);
    }

    @Override
    public String uri(String query) {
        return server.uri(prefix) + (query.isEmpty() ? "" : "&" + query);
    }

    /** Every key under this test's prefix but its epoch marker. */
    List<String> keys() {
        return lockKeys(server, prefix + ":*");
    }

    /** The entries (holders and waiters) in the queue of an exclusive lock. */
    @Override
    public List<String> entries(String lock) {
        return queue(server, prefix + ":{" + lock + "}:x");
    }

    /**
     * The entries of the queue at {@code base}, in order: the lone holder the acquire's fast path
     * keeps in its own key ({@code base:s}, "id mode permits owner token"), or else the queue's
     * sorted set.
     */
    @SuppressWarnings("unchecked")
    static List<String> queue(io.dlock.testkit.RedisServer on, String base) {
        List<String> out = new ArrayList<>();
        Object solo = on.command("GET", base + ":s");
        if (solo != null) {
            out.add(solo.toString().split(" ")[0]);
        }
        out.addAll((List<String>) on.command("ZRANGE", base + ":q", "0", "-1"));
        return out;
    }

    /** The server's clock in milliseconds (Redis {@code TIME}), the clock deadlines are kept in. */
    @SuppressWarnings("unchecked")
    static long serverMillis(io.dlock.testkit.RedisServer on) {
        List<Object> t = (List<Object>) on.command("TIME");
        return Long.parseLong(t.get(0).toString()) * 1000
                + Long.parseLong(t.get(1).toString()) / 1000;
    }

    /** The server's deadline (ms) of entry {@code id} in the queue at {@code base}. */
    static double deadline(io.dlock.testkit.RedisServer on, String base, String id) {
        Object dl = on.command("ZSCORE", base + ":d", id);
        Object solo = on.command("GET", base + ":s");
        if (dl == null && solo != null && solo.toString().startsWith(id + " ")) {
            // A lone holder's deadline is its key's expiry.
            return serverMillis(on) + (Long) on.command("PTTL", base + ":s");
        }
        return Double.parseDouble((String) dl);
    }

    /** How many PUBLISH commands the server has run, scripts included. */
    static long publishCount() {
        return commandCalls("publish");
    }

    static long commandCalls(String command) {
        String info = (String) server.command("INFO", "commandstats");
        Matcher m = Pattern.compile("cmdstat_" + command + ":calls=(\\d+)").matcher(info);
        return m.find() ? Long.parseLong(m.group(1)) : 0;
    }

    static Duration scaled(long seconds) {
        return Timing.scale(Duration.ofSeconds(seconds));
    }
}
