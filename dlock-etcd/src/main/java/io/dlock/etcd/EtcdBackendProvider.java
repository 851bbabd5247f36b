package io.dlock.etcd;

import io.dlock.spi.BackendUri;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockBackendProvider;
import java.util.Set;

/**
 * Registers the {@code etcd://} and {@code etcds://} schemes. Found by {@link
 * java.util.ServiceLoader}; not for direct use.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class EtcdBackendProvider implements LockBackendProvider {

    /** Creates the provider; called by {@link java.util.ServiceLoader}. */
    public EtcdBackendProvider() {}

    @Override
    public Set<String> schemes() {
        return Set.of("etcd", "etcds");
    }

    @Override
    public Set<String> parameters() {
        return EtcdUri.PARAMETERS;
    }

    @Override
    public LockBackend open(BackendUri uri) {
        return EtcdBackend.connect(EtcdUri.from(uri));
    }
}
