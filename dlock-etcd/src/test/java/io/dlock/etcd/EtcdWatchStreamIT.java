package io.dlock.etcd;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.core.LockEngine;
import io.dlock.spi.BackendUri;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Issue 14's leak: jetcd 0.8 half-closes a closed watch's stream and etcd 3.4 keeps such a stream
 * open until the connection closes, so a watch per wait left one open stream (and ~1.5 KB of client
 * heap) behind per wait. dlock-etcd's waits share one watch per client: however many waits, etcd
 * counts at most one watch stream per client that has waited.
 */
class EtcdWatchStreamIT extends EtcdTestSupport {

    /** A gauge or counter of etcd's {@code /metrics}, without labels. */
    static long metric(String name) throws Exception {
        java.net.URL url = new java.net.URL("http://" + server.connectString() + "/metrics");
        try (java.io.InputStream in = url.openStream()) {
            for (String line : new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n")) {
                if (line.startsWith(name + " ")) {
                    return (long) Double.parseDouble(line.substring(line.indexOf(' ') + 1));
                }
            }
        }
        throw new IllegalStateException("no " + name + " on " + server + "'s /metrics");
    }

    @Test
    void twoThousandContendedAcquisitions_leaveAtMostOneWatchStreamPerClientOnTheServer() throws Exception {
        long streamsBefore = metric("etcd_debugging_mvcc_watch_stream_total");
        List<EtcdBackend> backends = new ArrayList<>();
        List<LockClient> clients = new ArrayList<>();
        LockOptions options = LockOptions.defaults();
        for (int i = 0; i < 2; i++) {
            BackendUri parsed = BackendUri.parse(URI.create(uri("localQueueing=false")), options, EtcdUri.PARAMETERS);
            EtcdBackend backend = EtcdBackend.connect(EtcdUri.from(parsed));
            backends.add(backend);
            clients.add(track(LockEngine.newClient(backend, parsed.options())));
        }
        AtomicLong cycles = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        for (LockClient c : clients) {
            Thread t = new Thread(() -> {
                for (int i = 0; i < 1_000; i++) {
                    try (Lease l = c.lock("contended").acquire()) {
                        cycles.incrementAndGet();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            });
            t.start();
            threads.add(t);
        }
        for (Thread t : threads) {
            t.join(scaled(120).toMillis());
        }
        long waits = 0;
        for (EtcdBackend b : backends) {
            waits += ((EtcdLockProtocol) b.protocol()).watchedWaits();
        }

        assertThat(cycles.get()).isEqualTo(2_000);
        assertThat(waits)
                .as("waits through etcd (else this test shows nothing)")
                .isGreaterThanOrEqualTo(200);
        assertThat(metric("etcd_debugging_mvcc_watch_stream_total") - streamsBefore)
                .as("watch streams open on etcd after %d waits of 2 clients", waits)
                .isLessThanOrEqualTo(2);
        for (EtcdBackend b : backends) {
            assertThat(((EtcdLockProtocol) b.protocol()).openWatches()).isLessThanOrEqualTo(1);
        }
    }
}
