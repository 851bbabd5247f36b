package io.dlock.benchmarks;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
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
    private final Feed feed;
    private final CountDownLatch seen = new CountDownLatch(1);

    RedisMonitor(String address, String marker) {
        this.feed = new Feed(marker);
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
                if (feed.accept(line)) {
                    seen.countDown();
                    return;
                }
            }
        } catch (IOException e) {
            // closed
        }
    }

    /** Waits until the marker has been seen, at most 30 s; then the counts are complete. */
    void awaitMarker() throws InterruptedException {
        if (!seen.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("MONITOR did not see the marker " + feed.marker + " within 30 s");
        }
    }

    Map<String, Long> requests() {
        return feed.requests;
    }

    Map<String, Long> inScripts() {
        return feed.inScripts;
    }

    /** The client commands that ran inside a transaction, also counted in {@link #requests}. */
    Map<String, Long> inTransactions() {
        return feed.inTransactions;
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException e) {
            // nothing to do
        }
    }

    /** The counts of one feed, line by line. Thread-safety: one thread at a time. */
    static final class Feed {
        private final String marker;
        final Map<String, Long> requests = new TreeMap<>();
        final Map<String, Long> inScripts = new TreeMap<>();
        final Map<String, Long> inTransactions = new TreeMap<>();
        private final Set<String> inMulti = new HashSet<>(); // clients between their MULTI and EXEC

        Feed(String marker) {
            this.marker = marker;
        }

        /**
         * Counts one line of the feed; true when it is the marker. Commands a client sent between
         * its {@code MULTI} and {@code EXEC} are also counted apart ({@link #inTransactions}): the
         * feed shows them as {@code EXEC} runs them, and {@code EXEC}'s time in {@code INFO
         * commandstats} includes theirs.
         */
        boolean accept(String line) {
            int open = line.indexOf('[');
            int close = line.indexOf(']');
            if (open < 0 || close < 0) {
                return false;
            }
            String source = line.substring(open + 1, close);
            boolean lua = source.endsWith(" lua");
            int q1 = line.indexOf('"', close);
            int q2 = q1 < 0 ? -1 : line.indexOf('"', q1 + 1);
            if (q2 < 0) {
                return false;
            }
            String command = line.substring(q1 + 1, q2).toLowerCase(Locale.ROOT);
            if (lua) {
                inScripts.merge(command, 1L, Long::sum);
                return false;
            }
            if (command.equals("echo") && line.contains(marker)) {
                return true;
            }
            if (command.equals("info")) {
                return false;
            }
            requests.merge(command, 1L, Long::sum);
            if (command.equals("multi")) {
                inMulti.add(source);
            } else if (command.equals("exec") || command.equals("discard")) {
                inMulti.remove(source);
            } else if (inMulti.contains(source)) {
                inTransactions.merge(command, 1L, Long::sum);
            }
            return false;
        }
    }
}
