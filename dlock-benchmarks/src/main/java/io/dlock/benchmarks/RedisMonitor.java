package io.dlock.benchmarks;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Counts the commands clients send to Redis with {@code MONITOR}, which tells a client's own
 * requests ({@code [0 127.0.0.1:PORT] "evalsha" ...}) apart from the commands a script runs
 * ({@code [0 lua] "hincrby" ...}); {@code INFO commandstats} counts both alike. Counting stops at a
 * marker ({@code ECHO <marker>}) that the caller sends after the measured cycles, so every command
 * before it has been seen.
 *
 * <p>Thread-safety: one reader thread fills the counts; read them after {@link #awaitMarker}.
 */
final class RedisMonitor implements AutoCloseable {
    private final Socket socket;
    private final String marker;
    private final CountDownLatch seen = new CountDownLatch(1);
    private final Map<String, Long> requests = new TreeMap<>(); // written by the reader until the marker
    private final Map<String, Long> inScripts = new TreeMap<>();

    RedisMonitor(String address, String marker) {
        this.marker = marker;
        int colon = address.lastIndexOf(':');
        socket = new Socket();
        try {
            socket.connect(
                    new InetSocketAddress(address.substring(0, colon), Integer.parseInt(address.substring(colon + 1))),
                    5_000);
            socket.getOutputStream().write("MONITOR\r\n".getBytes(StandardCharsets.US_ASCII));
            BufferedReader in =
                    new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
            String ok = in.readLine();
            if (!"+OK".equals(ok)) {
                socket.close();
                throw new IllegalStateException("Redis at " + address + " refused MONITOR: " + ok);
            }
            Thread reader = new Thread(() -> read(in), "dlock-bench-redis-monitor");
            reader.setDaemon(true);
            reader.start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot MONITOR Redis at " + address, e);
        }
    }

    private void read(BufferedReader in) {
        try {
            String line;
            while ((line = in.readLine()) != null) {
                int close = line.indexOf(']');
                int open = line.indexOf('[');
                if (open < 0 || close < 0) {
                    continue;
                }
                boolean lua = line.substring(open, close).endsWith(" lua");
                int q1 = line.indexOf('"', close);
                int q2 = q1 < 0 ? -1 : line.indexOf('"', q1 + 1);
                if (q2 < 0) {
                    continue;
                }
                String command = line.substring(q1 + 1, q2).toLowerCase(java.util.Locale.ROOT);
                if (!lua && command.equals("echo") && line.contains(marker)) {
                    seen.countDown();
                    return;
                }
                if (!lua && command.equals("info")) {
                    continue;
                }
                (lua ? inScripts : requests).merge(command, 1L, Long::sum);
            }
        } catch (IOException e) {
            // closed
        }
    }

    /** Waits until the marker has been seen, at most 30 s; then the counts are complete. */
    void awaitMarker() throws InterruptedException {
        if (!seen.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("MONITOR did not see the marker " + marker + " within 30 s");
        }
    }

    Map<String, Long> requests() {
        return requests;
    }

    Map<String, Long> inScripts() {
        return inScripts;
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException e) {
            // nothing to do
        }
    }
}
