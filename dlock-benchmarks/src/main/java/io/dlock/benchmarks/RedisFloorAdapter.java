package io.dlock.benchmarks;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
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
 * The least any Redis lock does per uncontended cycle, on one Lettuce connection. {@link
 * Mode#PLAIN}: {@code SET key token NX PX 30000} to acquire (one round trip), a compare-and-delete
 * script by {@code EVALSHA} to release (one round trip). {@link Mode#FENCED}: the least a
 * <em>fenced</em> grant needs without a script, {@code MULTI, SET key token NX PX 30000, TIME,
 * EXEC} written together (one round trip; the transaction makes the server clock, the fencing
 * token, part of the grant), then the same release. Waiters would have to poll, so it runs only in
 * W1 and the server-cost measurement.
 *
 * <p>Thread-safety: safe from any thread. Lettuce pipelines concurrent commands on the connection;
 * in fenced mode commands are handed to Lettuce under one monitor, so that a transaction's four
 * commands stay together.
 */
final class RedisFloorAdapter implements BenchClient {
    /** Deletes the key only if it still holds our token: atomic because a script runs alone. */
    static final String COMPARE_AND_DELETE =
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

    private static final StringCodec CODEC = StringCodec.UTF8;

    /** The two floors. */
    enum Mode {
        /** {@code SET NX PX}: no fencing token. */
        PLAIN,
        /** A {@code MULTI}/{@code SET NX PX}/{@code TIME}/{@code EXEC} transaction: the clock as token. */
        FENCED
    }

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

    private final Mode mode;
    private final String prefix;
    private final RedisClient client;
    private final StatefulRedisConnection<String, String> connection;
    private final RedisCommands<String, String> redis;
    private final String sha;
    private final String clientId = UUID.randomUUID().toString();
    private final AtomicLong tokens = new AtomicLong();
    /**
     * Held while the fenced floor hands commands to Lettuce (not while it waits for replies):
     * Lettuce writes a batch command by command, so another thread's command could otherwise land
     * inside a transaction ("EXEC without MULTI").
     */
    private final Object dispatching = new Object();

    RedisFloorAdapter(String address) {
        this(address, Mode.PLAIN);
    }

    RedisFloorAdapter(String address, Mode mode) {
        this.mode = mode;
        this.prefix = mode == Mode.PLAIN ? "floor-bench:" : "fenced-floor-bench:";
        client = RedisClient.create(RedisURI.create("redis://" + address));
        try {
            connection = client.connect(CODEC);
            redis = connection.sync();
            sha = redis.scriptLoad(COMPARE_AND_DELETE);
        } catch (RuntimeException e) {
            client.shutdown();
            throw e;
        }
    }

    @Override
    public BenchLock lock(String name) {
        String key = prefix + name;
        SetArgs nxpx = SetArgs.Builder.nx().px(30_000);
        String[] keys = {key};
        return () -> {
            String token = clientId + ":" + tokens.incrementAndGet();
            while (mode == Mode.PLAIN ? !"OK".equals(redis.set(key, token, nxpx)) : fencedGrant(key, token) < 0) {
                if (Thread.interrupted()) {
                    throw new InterruptedException("interrupted while polling " + key);
                }
                Thread.onSpinWait(); // only reached under contention, which the floor never sees
            }
            if (mode == Mode.PLAIN) {
                return () -> redis.evalsha(sha, ScriptOutputType.INTEGER, keys, token);
            }
            return () -> {
                RedisFuture<Long> released;
                synchronized (dispatching) {
                    released = connection.async().evalsha(sha, ScriptOutputType.INTEGER, keys, token);
                }
                await(released, key);
            };
        };
    }

    /** One transaction: the fencing token (server microseconds) if granted, else -1. */
    private long fencedGrant(String key, String token) {
        var multi = new AsyncCommand<>(new Command<String, String, String>(Tx.BATCH_MULTI, new StatusOutput<>(CODEC)));
        var set = new AsyncCommand<>(new Command<String, String, String>(
                CommandType.SET,
                new StatusOutput<>(CODEC),
                new CommandArgs<>(CODEC)
                        .addKey(key)
                        .addValue(token)
                        .add("NX")
                        .add("PX")
                        .add(30_000)));
        var time = new AsyncCommand<>(new Command<String, String, String>(CommandType.TIME, new StatusOutput<>(CODEC)));
        var exec = new AsyncCommand<>(
                new Command<String, String, List<Object>>(Tx.BATCH_EXEC, new NestedMultiOutput<>(CODEC)));
        synchronized (dispatching) {
            connection.dispatch(List.of(multi, set, time, exec));
        }
        List<Object> replies = await(exec, key);
        if (!"OK".equals(replies.get(0))) {
            return -1;
        }
        List<?> clock = (List<?>) replies.get(1);
        return Long.parseLong((String) clock.get(0)) * 1_000_000 + Long.parseLong((String) clock.get(1));
    }

    private static <T> T await(java.util.concurrent.Future<T> reply, String key) {
        try {
            return reply.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for a reply on " + key, e);
        } catch (ExecutionException e) {
            throw new IllegalStateException("command on " + key + " failed: " + e.getCause(), e.getCause());
        }
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
