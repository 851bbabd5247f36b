package io.dlock.memcached;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.testkit.MemcachedServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * What memcached can do to a held lock, and what dlock does about it: the key deleted or evicted
 * behind the holder's back, a slow holder after its key expired, and a restart that loses every
 * item under a held lock.
 */
class MemcachedFaultIT extends MemcachedTestSupport {

    @Test
    void keyDeletedBehindTheHoldersBack_leaseInvalidAndOnLostOnce() throws Exception {
        LockClient holder = client("leaseTime=3s");
        Lease lease = holder.lock("gone").acquire();
        AtomicInteger lost = new AtomicInteger();
        lease.onLost(e -> lost.incrementAndGet());
        assertThat(server.command("md " + prefix + ":l:gone")).isEqualTo("HD");
        // The next renewal (every third of the lease) finds the key gone.
        await().atMost(scaled(3)).until(() -> !lease.isValid());
        await().atMost(scaled(2)).until(() -> lost.get() == 1);
        assertThat(lease.fencingToken()).isPositive();
        lease.close();
        assertThat(lost).hasValue(1);
    }

    @Test
    void slowHolder_afterItsKeyExpired_cannotDeleteOrExtendTheNextHoldersKey() throws Exception {
        LockClient slow = client("leaseTime=1s&renewal=false");
        LockClient next = client("leaseTime=10s");
        String key = prefix + ":l:slow";
        Lease old = slow.lock("slow").acquire();
        // The slow holder's key runs out (no renewal); the next holder gets the lock.
        Lease current = next.lock("slow").tryAcquire(scaled(10)).orElseThrow();
        assertThat(old.isValid()).isFalse();
        String before = server.command("mg " + key + " v c t");
        assertThat(before).contains(" c").endsWith(" " + "" + before.substring(before.lastIndexOf(' ') + 1));
        // Its late release: a CAS-checked delete of its own item, which is gone.
        old.close();
        String after = server.command("mg " + key + " v c");
        assertThat(after.split("\n")[1]).isEqualTo(before.split("\n")[1]);
        assertThat(casOf(after)).isEqualTo(casOf(before));
        assertThat(current.isValid()).isTrue();
        assertThat(client().lock("slow").tryAcquire(Duration.ZERO)).isEmpty();
        current.close();
    }

    @Test
    void holderWhoseKeyWasTaken_renewalFailsAndTheNewKeyIsUntouched() throws Exception {
        LockClient a = client("leaseTime=3s");
        LockClient b = client("leaseTime=30s");
        String key = prefix + ":l:taken";
        Lease first = a.lock("taken").acquire();
        AtomicInteger lost = new AtomicInteger();
        first.onLost(e -> lost.incrementAndGet());
        // Someone deletes the key (an operator, an eviction) and the next client takes it at once.
        server.command("md " + key);
        Lease second = b.lock("taken").tryAcquire(scaled(5)).orElseThrow();
        String taken = server.command("mg " + key + " v c");
        // The first holder's renewal compares its own CAS value: EX, and it turns invalid.
        await().atMost(scaled(3)).until(() -> lost.get() == 1);
        assertThat(first.isValid()).isFalse();
        String after = server.command("mg " + key + " v c");
        assertThat(casOf(after)).as("the new holder's item was not rewritten").isEqualTo(casOf(taken));
        assertThat(second.isValid()).isTrue();
        assertThat(second.fencingToken()).isGreaterThan(first.fencingToken());
        first.close();
        assertThat(casOf(server.command("mg " + key + " v c"))).isEqualTo(casOf(taken));
        second.close();
    }

    @Test
    void keyEvictedByFillingATinyCache_leaseInvalidAndOnLost() throws Exception {
        try (MemcachedServer tiny = MemcachedServer.start(1)) {
            settle(tiny);
            // A 9 s lease renews every 3 s: the filling, a few hundred milliseconds, falls between renewals.
            LockClient holder = track(LockClient.connect(tiny.uri(prefix) + "&leaseTime=9s"));
            Lease lease = holder.lock("evicted").acquire();
            AtomicInteger lost = new AtomicInteger();
            lease.onLost(e -> lost.incrementAndGet());
            String key = prefix + ":l:evicted";
            int written = fillUntilGone(tiny, key);
            assertThat(written).isPositive();
            await().atMost(scaled(5)).until(() -> lost.get() == 1);
            assertThat(lease.isValid()).isFalse();
            lease.close();
        }
    }

    /**
     * Writes 50,000 items around the size of the lock's item, about 50 times what a 1 MB cache
     * holds, then checks once that the key is gone (a read would mark the key active and shield it
     * from eviction). memcached evicts within a slab class, so the values span 40 to 89 bytes: the
     * lock's value ("<acquisition id> <client id>", 55 bytes today) shares a class with thousands of
     * them whatever the id formats become. Returns how many were written.
     */
    private static int fillUntilGone(MemcachedServer on, String key) throws Exception {
        String keyFormat = "f%0" + (key.length() - 1) + "d";
        int written = 0;
        try (java.net.Socket s = new java.net.Socket("127.0.0.1", on.port())) {
            var out = new java.io.BufferedOutputStream(s.getOutputStream());
            var in = s.getInputStream();
            byte[] sink = new byte[65536];
            for (int batch = 0; batch < 100; batch++) {
                StringBuilder sb = new StringBuilder();
                for (int i = 0; i < 500; i++) {
                    String value = "x".repeat(40 + written % 50);
                    sb.append("ms ")
                            .append(String.format(keyFormat, written++))
                            .append(' ')
                            .append(value.length())
                            .append(" q\r\n")
                            .append(value)
                            .append("\r\n");
                }
                sb.append("mn\r\n");
                out.write(sb.toString().getBytes(java.nio.charset.StandardCharsets.US_ASCII));
                out.flush();
                // Quiet mode: only errors and the final MN come back.
                StringBuilder got = new StringBuilder();
                while (!got.toString().endsWith("MN\r\n")) {
                    int n = in.read(sink);
                    if (n < 0) {
                        throw new IllegalStateException("memcached closed the connection");
                    }
                    got.append(new String(sink, 0, n, java.nio.charset.StandardCharsets.US_ASCII));
                }
            }
        }
        assertThat(on.command("mg " + key + " v"))
                .as("the lock key after %d items", written)
                .isEqualTo("EN");
        return written;
    }

    @Test
    void serverRestartedUnderAHeldLock_onLostAndNoGrantWhileTheOldLeaseIsValidAndTokensRise() throws Exception {
        LockClient holder = client("leaseTime=3s");
        LockClient other = client("leaseTime=3s");
        List<Long> earlier = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            try (Lease l = other.lock("restart").acquire()) {
                earlier.add(l.fencingToken());
            }
        }
        Lease held = holder.lock("restart").acquire();
        earlier.add(held.fencingToken());
        List<Boolean> lostCalls = new CopyOnWriteArrayList<>();
        held.onLost(e -> lostCalls.add(true));

        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Lease> won = new AtomicReference<>();
        AtomicReference<Boolean> oldValidAtGrant = new AtomicReference<>();
        AtomicInteger attempts = new AtomicInteger();
        Thread contender = new Thread(() -> {
            while (!stop.get() && won.get() == null) {
                attempts.incrementAndGet();
                try {
                    // An async lease owns itself, so the test thread may close it.
                    Lease got =
                            other.lock("restart").acquireAsync(Duration.ZERO).get();
                    oldValidAtGrant.set(held.isValid());
                    won.set(got);
                } catch (java.util.concurrent.ExecutionException | RuntimeException e) {
                    // not granted (held, quarantined) or the server is down: try again
                } catch (InterruptedException e) {
                    return;
                }
                try {
                    Thread.sleep(20); // the contender's own retry pace, not a wait for a condition
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        contender.start();
        try {
            server.restart();
            await().atMost(scaled(20)).until(() -> won.get() != null);
        } finally {
            stop.set(true);
            contender.join(scaled(10).toMillis());
        }
        assertThat(oldValidAtGrant.get())
                .as("old lease valid when the new grant landed")
                .isFalse();
        assertThat(held.isValid()).isFalse();
        assertThat(lostCalls).hasSize(1);
        assertThat(attempts.get())
                .as("the contender kept trying through the quarantine")
                .isGreaterThan(10);
        Lease next = won.get();
        for (long t : earlier) {
            assertThat(next.fencingToken()).isGreaterThan(t);
        }
        next.close();
        held.close();
        await().atMost(scaled(10)).until(() -> quarantineLeft(server) <= 0);
    }

    @Test
    void freshServer_quarantinedForTheLeaseTime_thenGrants() throws Exception {
        try (MemcachedServer fresh = MemcachedServer.start()) {
            LockClient c = track(LockClient.connect(fresh.uri(prefix) + "&leaseTime=2s"));
            assertThat(quarantineLeft(fresh)).isBetween(2L, 5L);
            assertThat(c.lock("q").tryAcquire(Duration.ZERO)).isEmpty();
            assertThat(fresh.keys(prefix + ":l:")).isEmpty();
            long start = System.nanoTime();
            try (Lease l = c.lock("q").tryAcquire(scaled(10)).orElseThrow()) {
                assertThat(l.isValid()).isTrue();
                assertThat(quarantineLeft(fresh)).isLessThanOrEqualTo(0);
            }
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThan(Duration.ofSeconds(1));
        }
    }

    /**
     * Issue 17: the quarantine after a restart runs from the server's start, not from the first
     * client's notice. Two restarts back to back (the second before the first quarantine ended)
     * under a held lease and a waiter: the holder loses its lease once; the waiter's grant comes
     * only once the server's clock has passed the last life's start + the lease + 1 s (when every
     * lease the earlier lives confirmed has run out), and within a second of it.
     */
    @Test
    void restartedTwiceUnderAHeldLock_quarantineFromTheLastStart_noGrantBeforeIt_grantRightAfter() throws Exception {
        LockClient holder = client("leaseTime=3s");
        LockClient waiter = client("leaseTime=3s");
        Lease held = holder.lock("twice").acquire();
        List<Boolean> lostCalls = new CopyOnWriteArrayList<>();
        held.onLost(e -> lostCalls.add(true));

        server.restart();
        // A client notices the first loss and writes life 2's marker; then the server dies again.
        await().atMost(scaled(10)).until(() -> marker(server).startsWith("VA"));
        long restartedAt = System.nanoTime();
        server.restart();
        long[] clock = stats(server);
        long start = clock[0] - clock[1] + DataLossGuard.START_DATED_EARLY_SECONDS;

        AtomicReference<Lease> got = new AtomicReference<>();
        AtomicBoolean oldValid = new AtomicBoolean();
        long[] grant = new long[2];
        // Until this client is back, an acquire fails at once (LockBackendException): then try again.
        await().atMost(scaled(20))
                .pollInSameThread() // the lease belongs to the thread that acquired it
                .ignoreException(LockBackendException.class)
                .until(() -> {
                    Lease l = waiter.lock("twice").tryAcquire(scaled(10)).orElse(null);
                    if (l != null) {
                        grant[0] = System.nanoTime();
                        oldValid.set(held.isValid());
                        grant[1] = stats(server)[0];
                        got.set(l);
                    }
                    return l != null;
                });
        Lease next = got.get();
        long grantedAt = grant[0];
        boolean oldValidAtGrant = oldValid.get();
        long serverTimeAtGrant = grant[1];
        long end = quarantineEnd(server);
        try {
            assertThat(end)
                    .as("life 3's quarantine end: its start + lease 3 s + 1 s")
                    .isEqualTo(start + 4);
            assertThat(serverTimeAtGrant).as("server clock at the grant").isBetween(end, end + 1);
            assertThat(oldValidAtGrant)
                    .as("old lease valid when the new grant landed")
                    .isFalse();
            assertThat(Duration.ofNanos(grantedAt - restartedAt))
                    .as("from the last restart's kill to the grant")
                    .isGreaterThan(Duration.ofSeconds(3));
            await().atMost(scaled(5)).until(() -> lostCalls.size() == 1);
            assertThat(next.fencingToken()).isGreaterThan(held.fencingToken());
        } finally {
            next.close();
            held.close();
        }
        assertThat(lostCalls).hasSize(1);
    }

    /**
     * A server up for a while without a marker is quarantined from its start, not from the
     * notice, as long as it has been up no longer than the lease (nothing can have been granted in
     * this life yet); later than that, from the notice, since a loss then may be a {@code flush_all}
     * or an eviction after grants.
     */
    @Test
    void freshServer_upLessThanTheLease_quarantinedFromItsStart_upLonger_fromTheNotice() throws Exception {
        try (MemcachedServer fresh = MemcachedServer.start()) {
            // memcached dates its start two seconds early: uptime 2 right after the start
            long[] first = stats(fresh);
            assertThat(first[1]).as("uptime right after the start").isBetween(2L, 3L);
            await().atMost(scaled(10)).until(() -> stats(fresh)[1] >= 3); // up (about) 1 s
            long[] before = stats(fresh);
            long start = before[0] - before[1] + DataLossGuard.START_DATED_EARLY_SECONDS;
            LockClient c = track(LockClient.connect(fresh.uri(prefix) + "&leaseTime=3s"));
            assertThat(quarantineEnd(fresh))
                    .as("from the start: start + 3 s + 1 s")
                    .isEqualTo(start + 4);
            try (Lease l = c.lock("q").tryAcquire(scaled(10)).orElseThrow()) {
                assertThat(stats(fresh)[0]).isGreaterThanOrEqualTo(start + 4);
                assertThat(l.isValid()).isTrue();
            }
            c.close();

            // The marker gone (flush_all) once the server has been up longer than the lease: from now.
            assertThat(fresh.command("flush_all")).isEqualTo("OK");
            long noticedNoEarlierThan = stats(fresh)[0];
            assertThat(noticedNoEarlierThan - start).isGreaterThan(3);
            LockClient d = track(LockClient.connect(fresh.uri(prefix) + "&leaseTime=3s"));
            assertThat(quarantineEnd(fresh)).isGreaterThanOrEqualTo(noticedNoEarlierThan + 4);
            assertThat(d.lock("q").tryAcquire(Duration.ZERO)).isEmpty();
            d.close();
            assertThat(fresh.keys(prefix + ":l:")).isEmpty();
        }
    }

    /**
     * A counter created during the quarantine (an attempt's {@code ma} rides in the marker read's
     * pipeline) may start below the lost counter's tokens; the first grant after the loss raises it
     * past the quarantine's end x 10^6. Here the counter is planted at 5 during the quarantine, and
     * the grant goes to a client that never held the name (no last token of its own to go by).
     */
    @Test
    void counterRecreatedLowDuringTheQuarantine_firstGrantRaisesItAboveTheOldTokens() throws Exception {
        LockClient before = client("leaseTime=2s");
        long oldToken;
        try (Lease l = before.lock("low").acquire()) {
            oldToken = l.fencingToken();
        }
        server.restart();
        await().atMost(scaled(10)).until(() -> marker(server).startsWith("VA")); // quarantined
        long end = quarantineEnd(server);
        String counter = prefix + ":t:low";
        server.command("md " + counter);
        assertThat(server.command("ms " + counter + " 1\r\n5")).isEqualTo("HD");
        LockClient fresh = client("leaseTime=2s");
        try (Lease l = fresh.lock("low").tryAcquire(scaled(10)).orElseThrow()) {
            assertThat(l.fencingToken()).as("token after the loss").isGreaterThan(oldToken);
            String value = server.command("mg " + counter + " v");
            assertThat(Long.parseLong(value.split("\n")[1].trim()))
                    .as("the counter after the first grant")
                    .isGreaterThanOrEqualTo(end * 1_000_000L);
        }
    }

    /** {@code stats}' {@code time} and {@code uptime}. */
    private static long[] stats(MemcachedServer on) {
        long time = -1;
        long uptime = -1;
        for (String line : on.command("stats").split("\n")) {
            if (line.startsWith("STAT time ")) {
                time = Long.parseLong(line.substring(10).trim());
            } else if (line.startsWith("STAT uptime ")) {
                uptime = Long.parseLong(line.substring(12).trim());
            }
        }
        assertThat(time).as("stats time").isPositive();
        assertThat(uptime).as("stats uptime").isNotNegative();
        return new long[] {time, uptime};
    }

    /** The boot marker's quarantine end (server clock, seconds). */
    private static long quarantineEnd(MemcachedServer on) {
        String m = marker(on);
        assertThat(m).startsWith("VA");
        return Long.parseLong(m.split("\n")[1].split(" ")[1]);
    }

    private static long casOf(String mgReply) {
        for (String token : mgReply.split("\n")[0].split(" ")) {
            if (token.startsWith("c")) {
                return Long.parseLong(token.substring(1));
            }
        }
        throw new AssertionError("no CAS in " + mgReply);
    }
}
