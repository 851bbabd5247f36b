package io.dlock.redis;

import io.dlock.spi.BackendUri;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockBackendProvider;
import java.util.Set;

/**
 * Registers the {@code redis://}, {@code rediss://}, {@code redis-sentinel://} and {@code
 * redis-cluster://} schemes. Found by {@link java.util.ServiceLoader}; not for direct use.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class RedisBackendProvider implements LockBackendProvider {

    /** Creates the provider; called by {@link java.util.ServiceLoader}. */
    public RedisBackendProvider() {}

    @Override
    public Set<String> schemes() {
        return Set.of("redis", "rediss", "redis-sentinel", "redis-cluster");
    }

    @Override
    public Set<String> parameters() {
        return RedisUri.PARAMETERS;
    }

    @Override
    public LockBackend open(BackendUri uri) {
        return RedisConnector.connect(RedisUri.from(uri));
    }
}
