package io.dlock.memcached;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.LockClient;
import io.dlock.testkit.DlockServer;
import io.dlock.testkit.LockFixtureSupport;
import io.dlock.testkit.MemcachedServer;
import io.dlock.testkit.Timing;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

/**
 * One memcached per test class; a fresh key prefix and fresh clients per test. After each test
 * every client is closed and the server must hold no lock or waiter key under the test's prefix
 * (fencing counters stay by design, see the README).
 */
@DlockServer(DlockServer.Kind.MEMCACHED)
abstract class MemcachedTestSupport extends LockFixtureSupport {
    static MemcachedServer server;

    String prefix;

    @BeforeAll
    static void startServer(MemcachedServer started) {
        server = started;
        settle(server);
    }

    /**
     * A fresh server has no boot marker, so the first client quarantines it for its lease time: a
     * client with a 1 s lease does it here, and the tests start once that quarantine is over.
     */
    static void settle(MemcachedServer on) {
        try (LockClient first = LockClient.connect("memcached://" + on.connectString() + "?leaseTime=1s")) {
            assertThat(marker(on)).startsWith("VA");
        }
        await().atMost(Timing.scale(Duration.ofSeconds(10))).until(() -> quarantineLeft(on) <= 0);
    }

    /** The boot marker as {@code mg dlock:epoch v t} returns it. */
    static String marker(MemcachedServer on) {
        return on.command("mg " + DataLossGuard.MARKER_KEY + " v t");
    }

    /** Seconds of quarantine left on the server's clock (negative when over); MAX_VALUE without a marker. */
    static long quarantineLeft(MemcachedServer on) {
        String m = marker(on);
        if (!m.startsWith("VA")) {
            return Long.MAX_VALUE;
        }
        String[] head = m.split("\n")[0].split(" ");
        long ttl = Long.parseLong(head[2].substring(1));
        String[] value = m.split("\n")[1].split(" ");
        long now = Long.parseLong(value[2]) - ttl;
        return Long.parseLong(value[1]) - now;
    }

    @BeforeEach
    void newPrefix(TestInfo info) {
        String name = getClass().getSimpleName() + "."
                + info.getTestMethod().orElseThrow().getName();
        prefix = "t" + Integer.toHexString(name.hashCode());
    }

    @AfterEach
    void closeClientsAndCheckClean() throws Exception {
        closeTracked();
        if (server.isAlive()) {
            List<String> left = new ArrayList<>(keysUnderPrefix());
            // Fencing counters stay by design; a grant record expires with its lease (MemcachedInspector).
            left.removeIf(k -> k.startsWith(prefix + ":t:") || k.startsWith(prefix + ":g:"));
            assertThat(left)
                    .as("lock and waiter keys left under prefix %s", prefix)
                    .isEmpty();
        }
    }

    @Override
    public String backendName() {
        return "memcached";
    }

    @Override
    public String shortLease() {
        return "leaseTime=2s";
    }

    @Override
    public Duration crashReleaseBound() {
        // The dead holder's key lives its lease rounded up plus one second (3 s); a poll comes soon after.
        return Duration.ofSeconds(6);
    }

    @Override
    public String uri(String query) {
        return server.uri(prefix) + (query.isEmpty() ? "" : "&" + query);
    }

    /**
     * The holder's key, read directly, then the waiter keys. memcached cannot list keys except with
     * the LRU crawler's metadump, which is no snapshot (an item moving between LRU segments while the
     * crawler runs can be missed), so the waiter keys are the union of two dumps.
     */
    @Override
    public List<String> entries(String lock) {
        List<String> out = new ArrayList<>();
        String holder = prefix + ":l:" + lock;
        if (!server.command("mg " + holder + " v").equals("EN")) {
            out.add(holder);
        }
        String waiters = prefix + ":w:" + lock + ":";
        for (String k : keysUnderPrefix()) {
            if (k.startsWith(waiters)) {
                out.add(k);
            }
        }
        return out;
    }

    /** Every key under the test's prefix: the union of two metadumps (see {@link #entries}). */
    java.util.Set<String> keysUnderPrefix() {
        java.util.Set<String> keys = new java.util.TreeSet<>(server.keys(prefix + ":"));
        keys.addAll(server.keys(prefix + ":"));
        return keys;
    }

    static Duration scaled(long seconds) {
        return Timing.scale(Duration.ofSeconds(seconds));
    }
}
