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
import java.util.Set;
import java.util.TreeMap;

/**
 * Reads the servers' own request counters: ZooKeeper's {@code mntr} four-letter word and Redis's
 * {@code INFO commandstats}. The server-cost figure is the counters' delta over a number of
 * uncontended cycles, divided by that number.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
final class ServerStats {
    /** Commands the benchmark's own probes send, left out of every delta. */
    private static final Set<String> PROBES = Set.of("info", "echo", "monitor");

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

    /** One command's counters in Redis's {@code INFO commandstats}: calls, and microseconds spent in them. */
    record CommandStat(long calls, long usec) {
        CommandStat minus(CommandStat before) {
            return new CommandStat(calls - before.calls, usec - before.usec);
        }

        CommandStat plus(CommandStat other) {
            return new CommandStat(calls + other.calls, usec + other.usec);
        }
    }

    /** Redis's {@code INFO commandstats}, by command name. Blocking: one round trip. */
    static Map<String, CommandStat> redisCommandStats(RedisCommands<String, String> redis) {
        return parseCommandStats(redis.info("commandstats"));
    }

    /**
     * Parses {@code INFO commandstats}. A script's time ({@code evalsha}) includes the time of the
     * commands it ran, which are also counted under their own names.
     */
    static Map<String, CommandStat> parseCommandStats(String info) {
        Map<String, CommandStat> out = new TreeMap<>();
        for (String line : info.split("\r?\n")) {
            // cmdstat_set:calls=3,usec=20,usec_per_call=6.67,rejected_calls=0,failed_calls=0
            if (!line.startsWith("cmdstat_")) {
                continue;
            }
            int colon = line.indexOf(':');
            long calls = -1;
            long usec = -1;
            for (String field : line.substring(colon + 1).split(",")) {
                if (field.startsWith("calls=")) {
                    calls = Long.parseLong(field.substring("calls=".length()));
                } else if (field.startsWith("usec=")) {
                    usec = Long.parseLong(field.substring("usec=".length()));
                }
            }
            if (calls < 0 || usec < 0) {
                throw new IllegalStateException("INFO commandstats line without calls or usec: " + line);
            }
            out.put(line.substring("cmdstat_".length(), colon), new CommandStat(calls, usec));
        }
        return out;
    }

    /** What {@code after} counted since {@code before}, without the commands a probe itself sends. */
    static Map<String, CommandStat> commandDelta(Map<String, CommandStat> before, Map<String, CommandStat> after) {
        Map<String, CommandStat> out = new TreeMap<>();
        after.forEach((command, stat) -> {
            CommandStat d = stat.minus(before.getOrDefault(command, new CommandStat(0, 0)));
            if (d.calls() > 0 && !PROBES.contains(command)) {
                out.put(command, d);
            }
        });
        return out;
    }
}
