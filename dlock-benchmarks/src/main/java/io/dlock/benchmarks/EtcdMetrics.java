package io.dlock.benchmarks;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * etcd's own counters from its {@code /metrics} page (Prometheus text on the client port), for
 * COST: the gRPC requests it started (by service and method), its WAL fsyncs, its MVCC operations
 * and the bytes its gRPC server received and sent, each as a delta over a number of uncontended
 * cycles, per cycle.
 *
 * <p>Lease requests are listed but not counted as the cycle's requests: keep-alives of every
 * client open in the runner arrive on their own schedule (dlock-etcd: one per second per client;
 * jetcd's keep-alive stream: one message per lease every third of its TTL), and a lease renewal
 * is no write in etcd 3.4 (no fsync). Those messages do count in the byte totals (a few dozen
 * bytes each, against the thousands of cycles measured).
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
final class EtcdMetrics {
    /** Counters whose per-cycle delta COST reports, under these names. */
    private static final Map<String, String> COUNTERS = Map.of(
            "etcd_disk_wal_fsync_duration_seconds_count", "walFsyncs",
            "etcd_disk_wal_fsync_duration_seconds_sum", "walFsyncSeconds",
            "etcd_server_proposals_committed_total", "raftProposals",
            "etcd_mvcc_put_total", "mvccPuts",
            "etcd_mvcc_delete_total", "mvccDeletes",
            "etcd_mvcc_range_total", "mvccRanges",
            "etcd_mvcc_txn_total", "mvccTxns",
            "etcd_network_client_grpc_received_bytes_total", "bytesReceived",
            "etcd_network_client_grpc_sent_bytes_total", "bytesSent");

    private static final String STARTED = "grpc_server_started_total";

    private EtcdMetrics() {}

    /**
     * Runs {@code n} acquire+release cycles of {@code lock} between two reads of etcd's counters;
     * puts the per-cycle figures into {@code extra} and returns the requests per cycle (every gRPC
     * request but the Lease service's).
     *
     * <p>Blocking: for the cycles, plus two HTTP reads of at most 5 s each. On failure: {@link
     * UncheckedIOException} if etcd does not answer.
     */
    static double cost(String address, BenchLock lock, int n, Map<String, Object> extra) throws InterruptedException {
        Map<String, Double> before = read(address);
        for (int i = 0; i < n; i++) {
            lock.acquire().release();
        }
        Map<String, Double> after = read(address);
        Map<String, Long> requests = new TreeMap<>();
        Map<String, Long> leases = new TreeMap<>();
        after.forEach((k, v) -> {
            if (!k.startsWith(STARTED + "{")) {
                return;
            }
            long d = Math.round(v - before.getOrDefault(k, 0.0));
            if (d <= 0) {
                return;
            }
            String method = label(k, "grpc_service") + "/" + label(k, "grpc_method");
            (method.contains(".Lease/") ? leases : requests).merge(method, d, Long::sum);
        });
        long total = requests.values().stream().mapToLong(Long::longValue).sum();
        extra.put("counter", "etcd /metrics " + STARTED);
        extra.put("requests", perCycle(requests, n));
        extra.put("leaseRequests", perCycle(leases, n));
        new TreeMap<>(COUNTERS).forEach((metric, name) -> {
            double d = after.getOrDefault(metric, 0.0) - before.getOrDefault(metric, 0.0);
            extra.put(name + "PerCycle", Math.round(d / n * 100) / 100.0);
        });
        return total / (double) n;
    }

    private static String perCycle(Map<String, Long> counts, int n) {
        StringBuilder sb = new StringBuilder();
        counts.forEach((k, v) -> sb.append(sb.length() == 0 ? "" : " ")
                .append(k.substring(k.lastIndexOf('.') + 1))
                .append(':')
                .append(String.format(Locale.ROOT, "%.2f", v / (double) n)));
        return sb.toString();
    }

    private static String label(String series, String name) {
        int at = series.indexOf(name + "=\"");
        if (at < 0) {
            return "?";
        }
        int from = at + name.length() + 2;
        return series.substring(from, series.indexOf('"', from));
    }

    /** Every sample of etcd's {@code /metrics}, by series (name and labels as printed). */
    static Map<String, Double> read(String address) {
        try {
            HttpURLConnection c = (HttpURLConnection) new URL("http://" + address + "/metrics").openConnection();
            c.setConnectTimeout(5_000);
            c.setReadTimeout(5_000);
            String text;
            try (InputStream in = c.getInputStream()) {
                text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            } finally {
                c.disconnect();
            }
            Map<String, Double> out = new TreeMap<>();
            for (String line : text.split("\n")) {
                if (line.isEmpty() || line.startsWith("#")) {
                    continue;
                }
                int space = line.lastIndexOf(' ');
                try {
                    out.put(line.substring(0, space), Double.parseDouble(line.substring(space + 1)));
                } catch (NumberFormatException e) {
                    // not a number (NaN is parsed; anything else is skipped)
                }
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException("etcd at " + address + " did not serve /metrics", e);
        }
    }
}
