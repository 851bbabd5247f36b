package io.dlock.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockSnapshot;
import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Nested namespaces ({@code app} and {@code app/orders}) share a key prefix on etcd; their locks
 * must still be apart, whatever the lock names, including names that are words of the key layout
 * ({@code x}, {@code rw}, {@code s}, {@code d}) or the inner namespace's last segment.
 */
class EtcdNamespaceIT extends EtcdTestSupport {

    private LockClient in(String namespace) {
        markEpoch(inspector, prefix + "/" + namespace);
        return track(LockClient.connect(server.uri(prefix + "/" + namespace)));
    }

    private LockInspector inspectorOf(String namespace) {
        BackendUri parsed = BackendUri.parse(
                URI.create(server.uri(prefix + "/" + namespace)), LockOptions.defaults(), EtcdUri.PARAMETERS);
        LockBackend backend = track(new EtcdBackendProvider().open(parsed));
        return backend.inspector().orElseThrow();
    }

    private static Lease now(Optional<Lease> granted, String what) {
        assertThat(granted).as(what).isPresent();
        return granted.orElseThrow();
    }

    @Test
    void lockNamedAfterTheInnerNamespace_andALockInside_doNotBlockEachOther() throws Exception {
        LockClient app = in("app");
        LockClient orders = in("app/orders");
        try (Lease inner = now(orders.lock("x").tryAcquire(Duration.ZERO), "lock x in app/orders");
                Lease outer = now(app.lock("orders").tryAcquire(Duration.ZERO), "lock orders in app")) {
            assertThat(inner.isValid()).isTrue();
            assertThat(outer.isValid()).isTrue();
        }
        try (Lease outer = now(app.lock("orders").tryAcquire(Duration.ZERO), "lock orders in app, first");
                Lease inner = now(orders.lock("x").tryAcquire(Duration.ZERO), "lock x in app/orders, second")) {
            assertThat(outer.isValid()).isTrue();
            assertThat(inner.isValid()).isTrue();
        }
    }

    @Test
    void semaphoreNamedAfterTheInnerNamespace_andALockNamedS_inside_areApart() throws Exception {
        LockClient app = in("app");
        LockClient orders = in("app/orders");
        try (Lease inner = now(orders.lock("s").tryAcquire(Duration.ZERO), "lock s in app/orders");
                Lease permit =
                        now(app.semaphore("orders", 1).tryAcquire(1, Duration.ZERO), "semaphore orders in app")) {
            assertThat(permit.isValid()).isTrue();
        }
        try (Lease permit = now(app.semaphore("orders", 1).tryAcquire(1, Duration.ZERO), "semaphore orders, first");
                Lease inner = now(orders.lock("s").tryAcquire(Duration.ZERO), "lock s, second");
                Lease innerSemaphore =
                        now(orders.semaphore("s", 1).tryAcquire(1, Duration.ZERO), "semaphore s in app/orders")) {
            assertThat(inner.isValid()).isTrue();
            assertThat(innerSemaphore.isValid()).isTrue();
        }
    }

    @Test
    void readWriteLockNamedAfterTheInnerNamespace_andLocksNamedRw_inside_areApart() throws Exception {
        LockClient app = in("app");
        LockClient orders = in("app/orders");
        try (Lease inner = now(orders.lock("rw").tryAcquire(Duration.ZERO), "lock rw in app/orders");
                Lease innerWrite = now(
                        orders.readWriteLock("rw").writeLock().tryAcquire(Duration.ZERO),
                        "write lock rw in app/orders");
                Lease outerWrite = now(
                        app.readWriteLock("orders").writeLock().tryAcquire(Duration.ZERO),
                        "write lock orders in app")) {
            assertThat(inner.isValid()).isTrue();
            assertThat(innerWrite.isValid()).isTrue();
            assertThat(outerWrite.isValid()).isTrue();
        }
        try (Lease outerWrite = now(
                        app.readWriteLock("orders").writeLock().tryAcquire(Duration.ZERO), "write lock orders, first");
                Lease innerRead = now(
                        orders.readWriteLock("x").readLock().tryAcquire(Duration.ZERO), "read lock x in app/orders");
                Lease innerWrite = now(
                        orders.readWriteLock("rw").writeLock().tryAcquire(Duration.ZERO), "write lock rw, second")) {
            assertThat(innerRead.isValid()).isTrue();
            assertThat(innerWrite.isValid()).isTrue();
        }
    }

    /**
     * Every layout word as a lock name, in three nested namespaces at once: each lock, read-write
     * lock and semaphore is granted, and each namespace's inspector sees its own locks only.
     */
    @Test
    void layoutWordsAsNames_inThreeNestedNamespaces_allGrantedAtOnce_andInspectedApart() throws Exception {
        List<String> namespaces = List.of("app", "app/orders", "app/orders/x");
        List<String> names = List.of("x", "rw", "s", "d", "orders", "app");
        List<Lease> held = new ArrayList<>();
        try {
            for (String ns : namespaces) {
                LockClient c = in(ns);
                for (String name : names) {
                    held.add(now(c.lock(name).tryAcquire(Duration.ZERO), "lock " + name + " in " + ns));
                    held.add(now(
                            c.readWriteLock(name + "-rw").writeLock().tryAcquire(Duration.ZERO),
                            "write lock " + name + "-rw in " + ns));
                    held.add(now(
                            c.semaphore(name + "-s", 1).tryAcquire(1, Duration.ZERO),
                            "semaphore " + name + "-s in " + ns));
                }
            }
            assertThat(held).allMatch(Lease::isValid);
            for (String ns : namespaces) {
                List<LockSnapshot> seen = inspectorOf(ns).inspect("");
                assertThat(seen).as("what the inspector of %s sees", ns).hasSize(names.size() * 3);
                assertThat(seen).as("holders in %s", ns).allSatisfy(l -> assertThat(l.holders())
                        .hasSize(1));
            }
        } finally {
            for (Lease l : held) {
                l.close();
            }
        }
    }

    @Test
    void foreignKeysAndValuesInAFamily_areSkipped_notParsed() throws Exception {
        LockClient app = in("app");
        String lock = prefix + "/app//orders/";
        List<String> foreign = List.of(lock + "s/by-hand", lock + "s/x/deeper", lock + "rw/by-hand", lock + "x");
        for (String key : foreign) {
            inspector
                    .getKVClient()
                    .put(bytes(key), bytes("s 1 x|garbage"))
                    .get(10, java.util.concurrent.TimeUnit.SECONDS);
        }
        try (Lease permit = now(app.semaphore("orders", 1).tryAcquire(1, Duration.ZERO), "semaphore orders");
                Lease write =
                        now(app.readWriteLock("orders").writeLock().tryAcquire(Duration.ZERO), "write lock orders")) {
            assertThat(permit.isValid()).isTrue();
            List<LockSnapshot> seen = inspectorOf("app").inspect("orders");
            assertThat(seen).hasSize(2).allSatisfy(l -> assertThat(l.holders()).hasSize(1));
        } finally {
            for (String key : foreign) {
                inspector.getKVClient().delete(bytes(key)).get(10, java.util.concurrent.TimeUnit.SECONDS);
            }
        }
    }
}
