package io.dlock.jdbc;

import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.core.LockEngine;
import io.dlock.spi.BackendUri;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockBackendProvider;
import java.net.URI;
import java.util.Set;

/**
 * Registers the {@code jdbc:postgresql:}, {@code jdbc:mariadb:}, {@code jdbc:mysql:} and {@code
 * jdbc:h2:} URIs. Found by {@link java.util.ServiceLoader}; not for direct use.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class JdbcBackendProvider implements LockBackendProvider {

    /** Creates the provider; called by {@link java.util.ServiceLoader}. */
    public JdbcBackendProvider() {}

    @Override
    public Set<String> schemes() {
        return Set.of("jdbc");
    }

    @Override
    public Set<String> parameters() {
        return JdbcUri.PARAMETERS;
    }

    @Override
    public boolean supports(URI uri) {
        return JdbcUri.supports(uri);
    }

    /** Parses the {@code jdbc:} URI itself: it is opaque, and most of its query belongs to the driver. */
    @Override
    public LockClient connect(URI uri, LockOptions options) {
        JdbcUri parsed = JdbcUri.parse(uri.toString(), options);
        return LockEngine.newClient(JdbcBackend.open(parsed), parsed.options());
    }

    /** Not used: {@link #connect(URI, LockOptions)} parses {@code jdbc:} URIs itself. */
    @Override
    public LockBackend open(BackendUri uri) {
        throw new UnsupportedOperationException("jdbc: URIs are parsed by JdbcBackendProvider.connect");
    }
}
