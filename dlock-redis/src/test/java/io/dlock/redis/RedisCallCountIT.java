package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * What an uncontended cycle costs the server, read from {@code INFO commandstats} deltas on the real
 * server (which count the commands scripts run as well as the client's own): two {@code EVALSHA}s;
 * inside them {@code EXISTS}, {@code TIME}, the epoch marker's {@code SET … GET}, the lone holder's
 * {@code SET … PX}; {@code GET}, {@code DEL}. Eight calls, where a separate {@code GET} of the
 * marker made nine; and the same per cycle for many threads over many names on one connection (the
 * benchmark's W5), where no cycle may fall back on the queue's path.
 */
class RedisCallCountIT extends RedisTestSupport {
    private static final Pattern CALLS = Pattern.compile("cmdstat_([a-z|]+):calls=(\\d+)");

    private static Map<String, Long> calls() {
        Map<String, Long> out = new TreeMap<>();
        Matcher m = CALLS.matcher((String) server.command("INFO", "commandstats"));
        while (m.find()) {
            out.put(m.group(1), Long.parseLong(m.group(2)));
        }
        return out;
    }

    /** The calls since {@code before}, without the probes' own INFO. */
    private static Map<String, Long> since(Map<String, Long> before) {
        Map<String, Long> delta = new TreeMap<>();
        calls().forEach((k, v) -> {
            long d = v - before.getOrDefault(k, 0L);
            if (d > 0 && !k.equals("info")) {
                delta.put(k, d);
            }
        });
        return delta;
    }

    @Test
    void uncontendedCycle_eightCallsOnTheServer() throws Exception {
        DistributedLock lock = client("leaseTime=60s").lock("counted");
        lock.acquire().close(); // loads the scripts
        int n = 200;
        Map<String, Long> before = calls();
        for (int i = 0; i < n; i++) {
            try (Lease lease = lock.acquire()) {
                assertThat(lease.isValid()).isTrue();
            }
        }
        assertThat(since(before))
                .containsExactlyInAnyOrderEntriesOf(Map.of(
                        "evalsha", 2L * n,
                        "exists", (long) n,
                        "time", (long) n,
                        "set", 2L * n,
                        "get", (long) n,
                        "del", (long) n));
    }

    @Test
    void manyThreadsOverManyNamesOnOneConnection_everyServerCycleTakesTheFastPath() throws Exception {
        LockClient client = client("leaseTime=60s");
        int names = 500;
        List<DistributedLock> locks = new ArrayList<>();
        for (int i = 0; i < names; i++) {
            locks.add(client.lock("w5-" + i));
        }
        for (DistributedLock l : locks) {
            l.acquire().close(); // every name taken once, as W5 does
        }
        Map<String, Long> before = calls();
        int threads = 16;
        int cycles = 100;
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> running = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            Thread th = new Thread(() -> {
                try {
                    for (int i = 0; i < cycles; i++) {
                        DistributedLock l =
                                locks.get(ThreadLocalRandom.current().nextInt(names));
                        try (Lease lease =
                                l.tryAcquire(java.time.Duration.ofSeconds(30)).orElseThrow()) {
                            assertThat(lease.isValid()).isTrue();
                        }
                    }
                } catch (Throwable e) {
                    failure.compareAndSet(null, e);
                }
            });
            th.start();
            running.add(th);
        }
        for (Thread th : running) {
            th.join(TimeUnit.SECONDS.toMillis(60));
            assertThat(th.isAlive()).as("a thread still cycling after 60 s").isFalse();
        }
        assertThat(failure.get()).isNull();
        Map<String, Long> delta = since(before);
        // Threads of one JVM on one name queue in the JVM (local hand-offs send nothing), so the
        // server sees fewer cycles than the threads made, each of them on the fast path.
        long serverCycles = delta.getOrDefault("exists", 0L);
        assertThat(serverCycles).isBetween(1L, (long) threads * cycles);
        assertThat(delta)
                .containsExactlyInAnyOrderEntriesOf(Map.of(
                        "evalsha", 2 * serverCycles,
                        "exists", serverCycles,
                        "time", serverCycles,
                        "set", 2 * serverCycles,
                        "get", serverCycles,
                        "del", serverCycles));
    }
}
