package io.dlock.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockLostException;
import io.dlock.LockOptions;
import io.dlock.core.LockEngine;
import io.dlock.spi.BackendUri;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A forced release told through the client's shared delete watch: short holds start no watch and
 * send nothing extra, and once the watch runs, the client's own releases of a slot key it reuses at
 * once never lose the next grant of that key.
 */
class EtcdForcedReleaseIT extends EtcdTestSupport {

    private EtcdBackend backend(String query) {
        BackendUri parsed = BackendUri.parse(URI.create(uri(query)), LockOptions.defaults(), EtcdUri.PARAMETERS);
        return EtcdBackend.connect(EtcdUri.from(parsed));
    }

    private LockClient client(EtcdBackend backend) {
        return track(LockEngine.newClient(backend, backend.options));
    }

    @Test
    void shortHolds_startNoWatch_andSendTwoTransactionsPerCycle() throws Exception {
        EtcdBackend backend = backend("leaseTime=30s");
        LockClient c = client(backend);
        c.lock("quick").acquire().close(); // the lease and the first read of the namespace
        int cycles = 200;
        double txns = EtcdLeaseIT.metric("grpc_server_started_total{grpc_method=\"Txn\"");
        for (int i = 0; i < cycles; i++) {
            c.lock("quick").acquire().close();
        }
        Thread.sleep(500); // past the sweeps that would start the watch for a grant still held
        assertThat(EtcdLeaseIT.metric("grpc_server_started_total{grpc_method=\"Txn\"") - txns)
                .as("transactions for %d acquire/release cycles", cycles)
                .isEqualTo(2.0 * cycles);
        assertThat(((EtcdLockProtocol) backend.protocol()).openWatches()).isZero();
    }

    @Test
    void ownReleasesOfAReusedKey_whileTheWatchRuns_neverLoseTheNextGrant() throws Exception {
        EtcdBackend backend = backend("leaseTime=30s");
        LockClient c = client(backend);
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease longHold = c.lock("long").acquire().onLost(lost::add);
        await().atMost(scaled(5)).until(() -> ((EtcdLockProtocol) backend.protocol()).openWatches() == 1);
        // Each cycle puts the same slot key again right after deleting it: the delete's event
        // arrives while the next grant of that key is held.
        for (int i = 0; i < 300; i++) {
            Lease l = c.lock("reused").acquire().onLost(lost::add);
            if (i % 50 == 0) {
                Thread.sleep(30); // an event surely delivered while this grant is held
            }
            l.close();
        }
        Lease last = c.lock("reused").acquire().onLost(lost::add);
        Thread.sleep(1000);
        assertThat(lost).isEmpty();
        assertThat(last.isValid()).isTrue();
        assertThat(longHold.isValid()).isTrue();
        last.close();
        longHold.close();
    }

    @Test
    void keyDeletedFromOutside_afterTheWatchStarted_theHolderIsToldWithinASecond() throws Exception {
        EtcdBackend backend = backend("leaseTime=30s");
        LockClient c = client(backend);
        List<LockLostException> lost = new CopyOnWriteArrayList<>();
        Lease held = c.lock("gone").acquire().onLost(lost::add);
        // Held long enough for the client's delete watch to start.
        await().atMost(scaled(5)).until(() -> ((EtcdLockProtocol) backend.protocol()).openWatches() == 1);
        long deleting = System.nanoTime();
        inspector.getKVClient().delete(bytes(entries("gone").get(0))).get(10, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(1)).pollInterval(Duration.ofMillis(2)).until(() -> !lost.isEmpty());
        System.out.printf(
                "[etcd] key deleted 500 ms after the grant; holder told %d ms after the delete%n",
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - deleting));
        assertThat(held.isValid()).isFalse();
        assertThat(lost.get(0)).hasMessageContaining("released by force");
        held.close();
        assertThat(lost).hasSize(1);
    }
}
