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

    /**
     * Opens the backend alone, without the engine (the CLI's {@code inspect|release|watch}). A
     * {@code jdbc:} URI is opaque, so {@link BackendUri#parse} cannot split it: the caller passes
     * its scheme-specific part ({@code postgresql://h/db?…}) as the authority, with an empty path,
     * and it is parsed here as {@link #connect(URI, LockOptions)} would.
     *
     * <p>Blocking: until the tables are checked. Thread-safety: safe from any thread. On failure:
     * {@link io.dlock.LockBackendException} (unreachable, table missing), {@link
     * IllegalArgumentException} for a malformed URI; nothing left open.
     */
    @Override
    public LockBackend open(BackendUri uri) {
        if (!"jdbc".equalsIgnoreCase(uri.scheme()) || !uri.path().isEmpty()) {
            throw new IllegalArgumentException("not a jdbc: URI; pass jdbc:<subprotocol>:… as the authority");
        }
        return JdbcBackend.open(JdbcUri.parse("jdbc:" + uri.authority(), uri.options()));
    }
}
