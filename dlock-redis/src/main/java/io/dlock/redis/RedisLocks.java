package io.dlock.redis;

import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.core.LockEngine;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisURI;
import java.util.Objects;

/**
 * dlock over a Lettuce {@link RedisClient} the application already has, for when its options,
 * resources (event loops, metrics, TLS trust) or credentials are set up in code rather than in a
 * URI. Otherwise use {@link LockClient#connect(String)} with a {@code redis://} URI.
 *
 * <pre>{@code
 * RedisClient redis = RedisClient.create(resources);          // yours, configured as you like
 * try (LockClient locks = RedisLocks.connect(redis, RedisURI.create("redis://cache:6379"),
 *         "dlock", LockOptions.defaults())) {
 *     ...
 * }
 * redis.shutdown();                                           // still yours to shut down
 * }</pre>
 *
 * <p>dlock opens two connections of its own through the client (commands, and its wake-up
 * channel), runs them under the client's {@code ClientOptions}, and closes them, not the client,
 * when the {@link LockClient} closes. Keep a command timeout enabled in those options ({@code
 * TimeoutOptions}, on by default): dlock's requests rely on it to fail rather than wait forever.
 * A connection that dies without a FIN or RST is replaced after a command timeout only when dlock
 * owns the client (a URI); with a handed-in client it recovers when TCP gives up on it.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class RedisLocks {
    private RedisLocks() {}

    /**
     * Connects dlock through {@code client} to {@code target}, with key prefix {@code dlock}.
     *
     * <p>Blocking: until both connections are open, at most about the client's connect timeout
     * each. Thread-safety: safe from any thread. On failure: {@link LockBackendException} (the
     * server cannot be reached, or refuses the credentials in {@code target}); the client is left
     * as it was.
     *
     * @param client the application's Lettuce client; not shut down by dlock
     * @param target the server (or Sentinels, with a master id) and credentials to use
     * @param options dlock's options (lease time, fairness, renewal, ...)
     * @return a client that owns its two connections
     * @throws LockBackendException if the connections cannot be opened
     */
    public static LockClient connect(RedisClient client, RedisURI target, LockOptions options) {
        return connect(client, target, RedisUri.DEFAULT_KEY_PREFIX, options);
    }

    /**
     * Connects dlock through {@code client} to {@code target}, keeping its keys and channels under
     * {@code keyPrefix}.
     *
     * <p>Blocking: until both connections are open. Thread-safety: safe from any thread. On
     * failure: {@link IllegalArgumentException} for a bad key prefix (nothing is opened); {@link
     * LockBackendException} if the connections cannot be opened (the client is left as it was).
     *
     * @param client the application's Lettuce client; not shut down by dlock
     * @param target the server (or Sentinels, with a master id) and credentials to use
     * @param keyPrefix prefix of every key and channel: non-empty printable ASCII, no spaces or braces
     * @param options dlock's options
     * @return a client that owns its two connections
     * @throws IllegalArgumentException if {@code keyPrefix} is not valid
     * @throws LockBackendException if the connections cannot be opened
     */
    public static LockClient connect(RedisClient client, RedisURI target, String keyPrefix, LockOptions options) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(keyPrefix, "keyPrefix");
        Objects.requireNonNull(options, "options");
        RedisUri uri = RedisUri.handedIn(target, keyPrefix, options);
        return LockEngine.newClient(RedisConnector.connect(client, target, uri), options);
    }
}
