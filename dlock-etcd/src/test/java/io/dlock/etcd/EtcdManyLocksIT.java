package io.dlock.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.core.LockEngine;
import io.dlock.spi.BackendUri;
import io.etcd.jetcd.options.GetOption;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * One client holding many locks with long names: the renewal's check that the keys are still
 * there must not grow into one reply past gRPC's 4 MiB limit (about 18,000 keys of 198-character
 * names), where every renewal failed and every lock was declared lost while etcd held them all.
 */
class EtcdManyLocksIT extends EtcdTestSupport {
    static final int LOCKS = 20_000;

    /** A valid lock name of 198 characters, distinct for each {@code i}. */
    static String name(int i) {
        return String.format("%06d-", i) + "n".repeat(191);
    }

    /** The keys (no values) under {@code keyPrefix}, read in pages so that no reply gets large. */
    static List<io.etcd.jetcd.KeyValue> keysOnly(String keyPrefix) throws Exception {
        List<io.etcd.jetcd.KeyValue> all = new ArrayList<>();
        io.etcd.jetcd.ByteSequence end = bytes(
                keyPrefix.substring(0, keyPrefix.length() - 1) + (char) (keyPrefix.charAt(keyPrefix.length() - 1) + 1));
        io.etcd.jetcd.ByteSequence from = bytes(keyPrefix);
        while (true) {
            io.etcd.jetcd.kv.GetResponse page = inspector
                    .getKVClient()
                    .get(
                            from,
                            GetOption.builder()
                                    .withRange(end)
                                    .withLimit(1000)
                                    .withKeysOnly(true)
                                    .build())
                    .get(10, TimeUnit.SECONDS);
            all.addAll(page.getKvs());
            if (!page.isMore() || page.getKvs().isEmpty()) {
                return all;
            }
            from = page.getKvs().get(page.getKvs().size() - 1).getKey().concat(bytes("\0"));
        }
    }

    @Test
    void twentyThousandLongNamedLocksHeldPastTwoRenewals_noneLost_allKeysStay() throws Exception {
        BackendUri parsed =
                BackendUri.parse(URI.create(uri("leaseTime=5s")), LockOptions.defaults(), EtcdUri.PARAMETERS);
        EtcdBackend backend = EtcdBackend.connect(EtcdUri.from(parsed));
        LockClient client = track(LockEngine.newClient(backend, parsed.options()));
        assertThat(name(0)).hasSize(198);

        AtomicInteger lost = new AtomicInteger();
        AtomicReference<Throwable> failed = new AtomicReference<>();
        List<Lease> held = java.util.Collections.synchronizedList(new ArrayList<>(LOCKS));
        Semaphore window = new Semaphore(64);
        long start = System.nanoTime();
        for (int i = 0; i < LOCKS && failed.get() == null; i++) {
            window.acquire();
            CompletableFuture<Lease> f = client.lock(name(i)).acquireAsync(scaled(30));
            f.whenComplete((l, e) -> {
                window.release();
                if (e != null) {
                    failed.compareAndSet(null, e);
                } else {
                    l.onLost(x -> lost.incrementAndGet());
                    held.add(l);
                }
            });
        }
        window.acquire(64);
        assertThat(failed.get()).as("an acquisition failed").isNull();
        long acquiredMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

        // Longer than two renewal intervals (a third of the lease time each) and the lease time itself.
        Thread.sleep(scaled(6).toMillis());

        assertThat(lost.get()).as("onLost calls").isZero();
        assertThat(held).hasSize(LOCKS).allMatch(Lease::isValid);
        String locks = prefix + "//0"; // every name starts with 0; the epoch marker is <ns>//#epoch
        long keys = inspector
                .getKVClient()
                .get(
                        bytes(locks),
                        GetOption.builder().isPrefix(true).withCountOnly(true).build())
                .get(10, TimeUnit.SECONDS)
                .getCount();
        assertThat(keys).isEqualTo(LOCKS);
        assertThat(backend.largestKeyCheck())
                .as("keys in the largest renewal check")
                .isPositive();
        int largestRenewalCheck = backend.largestKeyCheck();
        long largestRenewalCheckMs = backend.largestKeyCheckMillis();

        // Every key checked at once, as one renewal tick would if all 20,000 were due together.
        EtcdBackend.EtcdLease lease = java.util.Objects.requireNonNull(backend.currentLease());
        List<io.etcd.jetcd.KeyValue> onServer = keysOnly(locks);
        long checkStart = System.nanoTime();
        List<CompletableFuture<EtcdBackend.KeyState>> checks = new ArrayList<>(LOCKS);
        for (io.etcd.jetcd.KeyValue kv : onServer) {
            checks.add(backend.checkKey(lease, kv.getKey(), kv.getCreateRevision()));
        }
        assertThat(checks).hasSize(LOCKS);
        CompletableFuture.allOf(checks.toArray(new CompletableFuture<?>[0])).get(30, TimeUnit.SECONDS);
        long checkMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - checkStart);
        assertThat(checks).allMatch(c -> c.join() == EtcdBackend.KeyState.HELD);
        System.out.printf(
                "%d locks acquired in %d ms; largest renewal key check: %d keys in %d ms; all %d keys checked in %d"
                        + " ms%n",
                LOCKS, acquiredMs, largestRenewalCheck, largestRenewalCheckMs, LOCKS, checkMs);
        client.close();
        // The lease goes with the client (or, had its keep-alive starved under the 20,000 releases of
        // the close, a lease time later): its keys with it.
        org.awaitility.Awaitility.await()
                .atMost(scaled(15))
                .until(() -> inspector
                                .getKVClient()
                                .get(
                                        bytes(locks),
                                        GetOption.builder()
                                                .isPrefix(true)
                                                .withCountOnly(true)
                                                .build())
                                .get(10, TimeUnit.SECONDS)
                                .getCount()
                        == 0);
    }
}
