package io.dlock.memcached;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.testkit.MemcachedServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * A client of two memcached servers, one of which dies: only the locks whose names hash to the dead
 * server are affected (their leases turn invalid and fire {@code onLost}, their acquires and waits
 * fail with {@link LockBackendException}); the locks on the other server keep their leases and keep
 * working; once the dead server is back (empty, so after its quarantine) its locks work again.
 */
class MemcachedMultiServerIT extends MemcachedTestSupport {

    private MemcachedServer a;
    private MemcachedServer b;

    @BeforeEach
    void startTwo() {
        a = MemcachedServer.start();
        b = MemcachedServer.start();
        settle(a);
        settle(b);
    }

    @AfterEach
    void stopTwo() {
        for (MemcachedServer s : new MemcachedServer[] {a, b}) {
            if (s != null) {
                if (s.isAlive()) {
                    assertThat(s.keys(prefix + ":l:"))
                            .as("lock keys left on %s", s)
                            .isEmpty();
                    assertThat(s.keys(prefix + ":w:"))
                            .as("waiter keys left on %s", s)
                            .isEmpty();
                }
                s.close();
            }
        }
    }

    private String twoServers(String query) {
        return "memcached://" + a.connectString() + "," + b.connectString() + "?keyPrefix=" + prefix + "&" + query;
    }

    /** Lock names that live on {@code on}: found by acquiring and looking where the key landed. */
    private List<String> namesOn(LockClient c, MemcachedServer on, int count) throws Exception {
        List<String> names = new ArrayList<>();
        for (int i = 0; i < 200 && names.size() < count; i++) {
            String name = "n" + i;
            try (Lease l = c.lock(name).acquire()) {
                if (on.command("mg " + prefix + ":l:" + name + " v").startsWith("VA")) {
                    names.add(name);
                }
            }
        }
        assertThat(names).as("names hashing to %s among n0..n199", on).hasSize(count);
        return names;
    }

    @Test
    void oneServerKilled_onlyItsLocksAreLostAndRefused_theOthersKeepWorking() throws Exception {
        LockClient holder = track(LockClient.connect(twoServers("leaseTime=3s&connectTimeout=1s")));
        LockClient other = track(LockClient.connect(twoServers("leaseTime=3s&connectTimeout=1s")));
        List<String> onA = namesOn(holder, a, 2);
        List<String> onB = namesOn(holder, b, 2);

        Lease leaseA = holder.lock(onA.get(0)).acquire();
        Lease leaseB = holder.lock(onB.get(0)).acquire();
        List<LockLostException> lostA = new CopyOnWriteArrayList<>();
        List<LockLostException> lostB = new CopyOnWriteArrayList<>();
        leaseA.onLost(lostA::add);
        leaseB.onLost(lostB::add);
        // A waiter in another client for the lock on the server that dies.
        CompletableFuture<Lease> waiter = other.lock(onA.get(0)).acquireAsync(scaled(60));
        await().atMost(scaled(5)).until(() -> !a.keys(prefix + ":w:").isEmpty());

        a.kill();

        // The lease on the dead server is lost once it has been unreachable for a third of the lease.
        await().atMost(scaled(6)).until(() -> lostA.size() == 1);
        assertThat(leaseA.isValid()).isFalse();
        assertThat(lostA.get(0)).hasMessageContaining(a.connectString());
        // The waiter for it fails too, long before its 60 s.
        assertThatThrownBy(() -> waiter.get(scaled(10).toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS))
                .isInstanceOf(ExecutionException.class)
                .cause()
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining(a.connectString());
        // New acquires of its locks fail at once with a clear exception, naming the server.
        assertThatThrownBy(() -> holder.lock(onA.get(1)).tryAcquire(scaled(5)))
                .isInstanceOf(LockBackendException.class)
                .hasMessageContaining(a.connectString())
                .hasMessageContaining("other servers are unaffected");

        // The other server's lease stays valid through more than a renewal interval past the loss,
        // and its locks can be taken and released as before.
        await().during(Duration.ofSeconds(2)).atMost(scaled(4)).until(() -> leaseB.isValid() && lostB.isEmpty());
        try (Lease l = other.lock(onB.get(1)).tryAcquire(Duration.ZERO).orElseThrow()) {
            assertThat(l.isValid()).isTrue();
        }
        assertThat(other.lock(onB.get(0)).tryAcquire(Duration.ZERO))
                .as("the surviving holder still excludes others")
                .isEmpty();

        // The dead server comes back empty: after its quarantine its locks work again.
        a.restart();
        List<Long> tokens = new CopyOnWriteArrayList<>();
        await().atMost(scaled(20))
                .ignoreException(LockBackendException.class) // until the client has reconnected
                .until(() -> {
                    var got = other.lock(onA.get(1)).tryAcquire(Duration.ofMillis(500));
                    got.ifPresent(l -> {
                        tokens.add(l.fencingToken());
                        l.close();
                    });
                    return got.isPresent();
                });
        assertThat(tokens).hasSize(1);
        assertThat(leaseB.isValid()).isTrue();
        assertThat(lostB).isEmpty();
        leaseA.close();
        leaseB.close();
    }
}
