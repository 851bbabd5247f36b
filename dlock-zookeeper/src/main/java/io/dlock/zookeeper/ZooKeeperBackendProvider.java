package io.dlock.zookeeper;

import io.dlock.spi.BackendUri;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockBackendProvider;
import java.util.Set;

/**
 * Registers the {@code zookeeper://} scheme. Found by {@link java.util.ServiceLoader}; not for
 * direct use.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class ZooKeeperBackendProvider implements LockBackendProvider {

    /** Creates the provider; called by {@link java.util.ServiceLoader}. */
    public ZooKeeperBackendProvider() {}

    @Override
    public Set<String> schemes() {
        return Set.of("zookeeper");
    }

    @Override
    public LockBackend open(BackendUri uri) {
        return ZooKeeperBackend.connect(ZooKeeperUri.from(uri));
    }
}
