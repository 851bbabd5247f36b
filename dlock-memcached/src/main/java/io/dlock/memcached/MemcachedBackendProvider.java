package io.dlock.memcached;

import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockBackendProvider;
import java.net.URI;
import java.util.Set;

/**
 * Registers the {@code memcached://} scheme. Found by {@link java.util.ServiceLoader}; not for
 * direct use.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class MemcachedBackendProvider implements LockBackendProvider {

    /** Creates the provider; called by {@link java.util.ServiceLoader}. */
    public MemcachedBackendProvider() {}

    @Override
    public Set<String> schemes() {
        return Set.of("memcached");
    }

    @Override
    public Set<String> parameters() {
        return MemcachedUri.PARAMETERS;
    }

    @Override
    public LockBackend open(BackendUri uri) {
        return MemcachedBackend.connect(MemcachedUri.from(uri));
    }

    /**
     * Connects, refusing {@code fair=true} in the URI: memcached has no queue, so waiters are
     * granted in no particular order whatever the options say ({@code capabilities()} lacks {@code
     * FAIR}).
     *
     * <p>Blocking: until connected to every server, about the connect timeout each at most.
     * Thread-safety: safe from any thread. On failure: {@link IllegalArgumentException} for a bad
     * URI (nothing opened), {@link io.dlock.LockBackendException} if a server cannot be reached.
     */
    @Override
    public LockClient connect(URI uri, LockOptions options) {
        String query = uri.getRawQuery();
        if (query != null) {
            for (String pair : query.split("&")) {
                if (pair.equalsIgnoreCase("fair=true")) {
                    throw new IllegalArgumentException("parameter 'fair': memcached has no queue, so fair=true"
                            + " (FIFO granting) is not available; leave it out or use fair=false");
                }
            }
        }
        return LockBackendProvider.super.connect(uri, options);
    }
}
