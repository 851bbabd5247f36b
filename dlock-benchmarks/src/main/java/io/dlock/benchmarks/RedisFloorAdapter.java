package io.dlock.benchmarks;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.SetArgs;
import io.lettuce.core.api.StatefulRedisConnection;
import io.lettuce.core.api.sync.RedisCommands;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The least any Redis lock does per uncontended cycle, on one Lettuce connection: {@code SET key
 * token NX PX 30000} to acquire (one round trip), a compare-and-delete script by {@code EVALSHA} to
 * release (one round trip). Waiters would have to poll, so it runs only in W1 and the server-cost
 * measurement.
 *
 * <p>Thread-safety: safe from any thread; Lettuce pipelines concurrent commands on the connection.
 */
final class RedisFloorAdapter implements BenchClient {
    /** Deletes the key only if it still holds our token: atomic because a script runs alone. */
    static final String COMPARE_AND_DELETE =
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";

    private static final String PREFIX = "floor-bench:";

    private final RedisClient client;
    private final StatefulRedisConnection<String, String> connection;
    private final RedisCommands<String, String> redis;
    private final String sha;
    private final String clientId = UUID.randomUUID().toString();
    private final AtomicLong tokens = new AtomicLong();

    RedisFloorAdapter(String address) {
        client = RedisClient.create(RedisURI.create("redis://" + address));
        try {
            connection = client.connect();
            redis = connection.sync();
            sha = redis.scriptLoad(COMPARE_AND_DELETE);
        } catch (RuntimeException e) {
            client.shutdown();
            throw e;
        }
    }

    @Override
    public BenchLock lock(String name) {
        String key = PREFIX + name;
        SetArgs nxpx = SetArgs.Builder.nx().px(30_000);
        String[] keys = {key};
        return () -> {
            String token = clientId + ":" + tokens.incrementAndGet();
            while (!"OK".equals(redis.set(key, token, nxpx))) {
                if (Thread.interrupted()) {
                    throw new InterruptedException("interrupted while polling " + key);
                }
                Thread.onSpinWait(); // only reached under contention, which the floor never sees
            }
            return () -> redis.evalsha(sha, ScriptOutputType.INTEGER, keys, token);
        };
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
