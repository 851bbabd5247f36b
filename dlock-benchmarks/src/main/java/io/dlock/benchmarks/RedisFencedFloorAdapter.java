package io.dlock.benchmarks;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.NestedMultiOutput;
import io.lettuce.core.output.StatusOutput;
import io.lettuce.core.protocol.AsyncCommand;
import io.lettuce.core.protocol.Command;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.protocol.ProtocolKeyword;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The least a <em>fenced</em> Redis lock does per uncontended cycle without a script: {@code
 * MULTI, SET key token NX PX 30000, TIME, EXEC} in one write (one round trip; the transaction makes
 * the server clock, the fencing token, part of the grant), then the floor's compare-and-delete
 * script. A diagnostic for the W1 analysis in BENCHMARKS.md, not in the default set: it sends 5
 * commands per cycle where the Redis lock may send 2, and it is not a lock (waiters would
 * have to poll).
 *
 * <p>Thread-safety: safe from any thread; commands are handed to Lettuce under one monitor, so a
 * transaction's four commands stay together on the connection.
 */
final class RedisFencedFloorAdapter implements BenchClient {
    private static final String PREFIX = "fenced-floor-bench:";
    private static final StringCodec CODEC = StringCodec.UTF8;

    /**
     * MULTI and EXEC under names Lettuce does not recognise: Lettuce's connection turns every
     * command after a MULTI it sees into part of a transaction it tracks, which would capture other
     * threads' commands. The bytes on the wire are the real commands.
     */
    private enum Tx implements ProtocolKeyword {
        BATCH_MULTI("MULTI"),
        BATCH_EXEC("EXEC");

        private final byte[] bytes;

        Tx(String command) {
            this.bytes = command.getBytes(StandardCharsets.US_ASCII);
        }

        @Override
        public byte[] getBytes() {
            return bytes;
        }
    }

    private final RedisClient client;
    private final StatefulRedisConnection<String, String> connection;
    private final String sha;
    private final String clientId = UUID.randomUUID().toString();
    private final AtomicLong tokens = new AtomicLong();
    /**
     * Held while commands are handed to Lettuce (not while waiting for replies): Lettuce writes a
     * batch command by command, so another thread's command could otherwise land inside a
     * transaction ("EXEC without MULTI").
     */
    private final Object dispatching = new Object();

    RedisFencedFloorAdapter(String address) {
        client = RedisClient.create(RedisURI.create("redis://" + address));
        try {
            connection = client.connect(CODEC);
            sha = connection.sync().scriptLoad(RedisFloorAdapter.COMPARE_AND_DELETE);
        } catch (RuntimeException e) {
            client.shutdown();
            throw e;
        }
    }

    @Override
    public BenchLock lock(String name) {
        String key = PREFIX + name;
        String[] keys = {key};
        return () -> {
            String token = clientId + ":" + tokens.incrementAndGet();
            while (grant(key, token) < 0) {
                if (Thread.interrupted()) {
                    throw new InterruptedException("interrupted while polling " + key);
                }
                Thread.onSpinWait(); // only reached under contention, which the floor never sees
            }
            return () -> {
                RedisFuture<Long> released;
                synchronized (dispatching) {
                    released = connection.async().evalsha(sha, ScriptOutputType.INTEGER, keys, token);
                }
                try {
                    released.get();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while releasing " + key, e);
                } catch (ExecutionException e) {
                    throw new IllegalStateException("release of " + key + " failed: " + e.getCause(), e.getCause());
                }
            };
        };
    }

    /** One transaction: the fencing token (server microseconds) if granted, else -1. */
    private long grant(String key, String token) throws InterruptedException {
        var multi = new AsyncCommand<>(new Command<String, String, String>(Tx.BATCH_MULTI, new StatusOutput<>(CODEC)));
        var set = new AsyncCommand<>(new Command<String, String, String>(CommandType.SET, new StatusOutput<>(CODEC),
                new CommandArgs<>(CODEC).addKey(key).addValue(token).add("NX").add("PX").add(30_000)));
        var time = new AsyncCommand<>(new Command<String, String, String>(CommandType.TIME, new StatusOutput<>(CODEC)));
        var exec = new AsyncCommand<>(new Command<String, String, List<Object>>(Tx.BATCH_EXEC,
                new NestedMultiOutput<>(CODEC)));
        synchronized (dispatching) {
            connection.dispatch(List.of(multi, set, time, exec));
        }
        List<Object> replies;
        try {
            replies = exec.get();
        } catch (ExecutionException e) {
            throw new IllegalStateException("transaction on " + key + " failed: " + e.getCause(), e.getCause());
        }
        if (!"OK".equals(replies.get(0))) {
            return -1;
        }
        List<?> clock = (List<?>) replies.get(1);
        return Long.parseLong((String) clock.get(0)) * 1_000_000 + Long.parseLong((String) clock.get(1));
    }

    @Override
    public void close() {
        try {
            connection.close();
        } finally {
            client.shutdown();
        }
    }
}
