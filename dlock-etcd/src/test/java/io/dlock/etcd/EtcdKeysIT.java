package io.dlock.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.PutOption;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The exclusive lock's keys: a client reuses one key per lock ({@code <lease hex>-<slot>}) instead
 * of one per acquisition, since every range over a lock's prefix walks each key etcd has had
 * there since the last compaction; the acquisition is named in the value; a slot another
 * acquisition of the same client still has is never adopted or deleted.
 */
class EtcdKeysIT extends EtcdTestSupport {

    @Test
    void acquireRelease_manyCycles_oneKeyReusedWithTheAcquisitionInTheValue() throws Exception {
        LockClient c = client("");
        Set<String> keys = new HashSet<>();
        Set<String> values = new HashSet<>();
        for (int i = 0; i < 20; i++) {
            try (Lease l = c.lock("reused").acquire()) {
                KeyValue kv = kvs(prefix + "//reused/x/").get(0);
                keys.add(kv.getKey().toString(StandardCharsets.UTF_8));
                values.add(kv.getValue().toString(StandardCharsets.UTF_8));
                assertThat(kv.getCreateRevision()).isEqualTo(l.fencingToken() >> 10);
            }
        }
        assertThat(keys).hasSize(1);
        assertThat(keys.iterator().next()).endsWith("-0");
        assertThat(values).hasSize(20).allMatch(v -> v.startsWith("x "));
    }

    @Test
    void twoAcquisitionsOfOneClient_takeTwoSlots_thenSlotZeroServesAgain() throws Exception {
        LockClient c = client("localQueueing=false");
        Lease first = c.lock("two").acquire();
        CompletableFuture<Lease> second = c.lock("two").acquireAsync(scaled(10));
        await().atMost(scaled(5)).until(() -> keys(prefix + "//two/x/").size() == 2);
        List<String> both = keys(prefix + "//two/x/");
        assertThat(both.get(0)).endsWith("-0");
        assertThat(both.get(1)).endsWith("-1");
        assertThat(second).isNotDone();
        first.close();
        Lease granted = second.get(10, TimeUnit.SECONDS);
        assertThat(granted.fencingToken()).isGreaterThan(first.fencingToken());
        granted.close();
        try (Lease again = c.lock("two").acquire()) {
            assertThat(keys(prefix + "//two/x/")).singleElement().asString().endsWith("-0");
        }
    }

    @Test
    void twoLockNamesInOneSlotStripe_heldAtOnce_takeSlotsZeroAndOne_thenZeroServesEachAgain() throws Exception {
        String a = "stripe-a";
        String b = null;
        for (int i = 0; i < 1_000_000 && b == null; i++) {
            String candidate = "stripe-b" + i;
            if (EtcdLockProtocol.stripe(candidate) == EtcdLockProtocol.stripe(a)) {
                b = candidate;
            }
        }
        assertThat(b).as("a name in the stripe of %s", a).isNotNull();
        LockClient c = client("");
        try (Lease la = c.lock(a).acquire();
                Lease lb = c.lock(b).acquire()) {
            assertThat(keys(prefix + "//" + a + "/x/"))
                    .singleElement()
                    .asString()
                    .endsWith("-0");
            assertThat(keys(prefix + "//" + b + "/x/"))
                    .singleElement()
                    .asString()
                    .endsWith("-1");
            assertThat(lb.fencingToken()).isGreaterThan(la.fencingToken());
        }
        assertThat(keys(prefix + "//" + a + "/x/")).isEmpty();
        assertThat(keys(prefix + "//" + b + "/x/")).isEmpty();
        try (Lease again = c.lock(b).acquire()) {
            assertThat(keys(prefix + "//" + b + "/x/"))
                    .singleElement()
                    .asString()
                    .endsWith("-0");
        }
    }

    /** etcd's gauge of open watchers ({@code etcd_debugging_mvcc_watcher_total} on /metrics). */
    static long watchers() throws Exception {
        java.net.URL url = new java.net.URL("http://" + server.connectString() + "/metrics");
        try (java.io.InputStream in = url.openStream()) {
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                if (line.startsWith("etcd_debugging_mvcc_watcher_total ")) {
                    return (long) Double.parseDouble(line.substring(line.indexOf(' ') + 1));
                }
            }
        }
        throw new IllegalStateException("no etcd_debugging_mvcc_watcher_total on /metrics");
    }

    @Test
    void contendedHandOffs_eachClientKeepsOneSharedWatchOnTheServer_notOnePerWait() throws Exception {
        long before = watchers();
        LockClient a = client("localQueueing=false");
        LockClient b = client("localQueueing=false");
        java.util.concurrent.atomic.AtomicLong waits = new java.util.concurrent.atomic.AtomicLong();
        List<Thread> threads = new java.util.ArrayList<>();
        for (LockClient c : List.of(a, b)) {
            Thread t = new Thread(() -> {
                for (int i = 0; i < 100; i++) {
                    try (Lease l = c.lock("handoff").acquire()) {
                        waits.incrementAndGet();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join(120_000);
        }
        assertThat(waits.get()).isEqualTo(200);
        // Each client's waits share its one watch (EtcdLockProtocol.SharedWatch): two, however many waits.
        assertThat(watchers()).isLessThanOrEqualTo(before + 2);
    }

    @Test
    void slotTakenByAKeyTheClientDoesNotKnow_nextSlotUsed_andTheForeignKeyIsWaitedFor() throws Exception {
        LockClient c = client("");
        String leaseHex;
        try (Lease l = c.lock("probe").acquire()) {
            String k = keys(prefix + "//probe/x/").get(0);
            leaseHex = k.substring(k.lastIndexOf('/') + 1, k.lastIndexOf('-'));
        }
        // A key on the client's own lease in slot 0 that no acquisition of it made (as if its
        // bookkeeping had freed the slot too early): neither adopted nor deleted.
        String foreign = prefix + "//taken/x/" + leaseHex + "-0";
        inspector
                .getKVClient()
                .put(
                        bytes(foreign),
                        bytes("x someone-else"),
                        PutOption.builder()
                                .withLeaseId(Long.parseLong(leaseHex, 16))
                                .build())
                .get(10, TimeUnit.SECONDS);
        CompletableFuture<Lease> waiting = c.lock("taken").acquireAsync(scaled(10));
        await().atMost(scaled(5)).until(() -> keys(prefix + "//taken/x/").size() == 2);
        assertThat(keys(prefix + "//taken/x/").get(1)).endsWith(leaseHex + "-1");
        assertThat(c.lock("taken").tryAcquire(Duration.ZERO)).isEmpty();
        assertThat(waiting).isNotDone();
        assertThat(keys(prefix + "//taken/x/").get(0)).isEqualTo(foreign);
        inspector.getKVClient().delete(bytes(foreign)).get(10, TimeUnit.SECONDS);
        try (Lease l = waiting.get(10, TimeUnit.SECONDS)) {
            assertThat(l.isValid()).isTrue();
        }
    }
}
