package io.dlock.benchmarks;

import io.lettuce.core.api.sync.RedisCommands;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;

/**
 * Reads the servers' own request counters: ZooKeeper's {@code mntr} four-letter word and Redis's
 * {@code INFO commandstats}. The server-cost figure is the counters' delta over a number of
 * uncontended cycles, divided by that number.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
final class ServerStats {
    private ServerStats() {}

    /**
     * Sends a four-letter word to ZooKeeper and returns the whole answer.
     *
     * <p>Blocking: up to 5 s. On failure: {@link UncheckedIOException}.
     */
    static String fourLetterWord(String address, String word) {
        int colon = address.lastIndexOf(':');
        try (Socket socket = new Socket()) {
            socket.connect(
                    new InetSocketAddress(address.substring(0, colon), Integer.parseInt(address.substring(colon + 1))),
                    5_000);
            socket.setSoTimeout(5_000);
            OutputStream out = socket.getOutputStream();
            out.write(word.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            return new String(in.readAllBytes(), StandardCharsets.US_ASCII);
        } catch (IOException e) {
            throw new UncheckedIOException("ZooKeeper at " + address + " did not answer '" + word + "'", e);
        }
    }

    /** ZooKeeper's {@code mntr} counters that are numbers, by name. */
    static Map<String, Long> zooKeeperCounters(String address) {
        Map<String, Long> out = new TreeMap<>();
        for (String line : fourLetterWord(address, "mntr").split("\n")) {
            String[] kv = line.trim().split("\t");
            if (kv.length == 2) {
                try {
                    out.put(kv[0], Long.parseLong(kv[1].trim()));
                } catch (NumberFormatException e) {
                    // a text value such as zk_version
                }
            }
        }
        if (!out.containsKey("zk_packets_received")) {
            throw new IllegalStateException("ZooKeeper at " + address + " answered mntr without zk_packets_received");
        }
        return out;
    }

    /** ZooKeeper's {@code zk_packets_received}, which {@link #zooKeeperCounters} checks is there. */
    static long zooKeeperPacketsReceived(String address) {
        return java.util.Objects.requireNonNull(zooKeeperCounters(address).get("zk_packets_received"));
    }

    /** Bytes Redis has read from all its clients ({@code total_net_input_bytes} of {@code INFO stats}). */
    static long redisNetInputBytes(RedisCommands<String, String> redis) {
        for (String line : redis.info("stats").split("\r?\n")) {
            if (line.startsWith("total_net_input_bytes:")) {
                return Long.parseLong(
                        line.substring("total_net_input_bytes:".length()).trim());
            }
        }
        throw new IllegalStateException("INFO stats without total_net_input_bytes");
    }

    /** Redis's calls per command from {@code INFO commandstats}, by command name. */
    static Map<String, Long> redisCommandCalls(RedisCommands<String, String> redis) {
        Map<String, Long> out = new TreeMap<>();
        for (String line : redis.info("commandstats").split("\r?\n")) {
            // cmdstat_set:calls=3,usec=20,usec_per_call=6.67,rejected_calls=0,failed_calls=0
            if (!line.startsWith("cmdstat_")) {
                continue;
            }
            int colon = line.indexOf(':');
            String command = line.substring("cmdstat_".length(), colon);
            for (String field : line.substring(colon + 1).split(",")) {
                if (field.startsWith("calls=")) {
                    out.put(command, Long.parseLong(field.substring("calls=".length())));
                }
            }
        }
        return out;
    }
}
