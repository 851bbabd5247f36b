package io.dlock.spi;

import io.dlock.LockClient;
import io.dlock.LockClientProvider;
import io.dlock.LockOptions;
import io.dlock.core.LockEngine;
import java.net.URI;
import java.util.Locale;
import java.util.Set;

/**
 * The service a backend module registers in {@code META-INF/services/io.dlock.LockClientProvider}.
 * It names its URI schemes and opens a {@link LockBackend}; the engine does the rest.
 *
 * <p>Thread-safety: implementations must be safe for use from any thread.
 */
public interface LockBackendProvider extends LockClientProvider {

    /**
     * The URI schemes this backend serves, in lower case.
     *
     * @return for example {@code Set.of("zookeeper")}
     */
    Set<String> schemes();

    /**
     * Query parameters this backend accepts beyond the common ones of {@link BackendUri}.
     *
     * @return parameter names; empty by default
     */
    default Set<String> parameters() {
        return Set.of();
    }

    /**
     * Connects to the server described by {@code uri}.
     *
     * <p>Blocking: until connected or the connect timeout passes. On failure: throws, and closes
     * whatever it opened.
     *
     * @param uri the parsed URI with its options
     * @return the connected backend
     * @throws IllegalArgumentException if the URI does not fit this backend
     * @throws io.dlock.LockBackendException if the server cannot be reached or refuses
     */
    LockBackend open(BackendUri uri);

    @Override
    default boolean supports(URI uri) {
        String scheme = uri.getScheme();
        return scheme != null && schemes().contains(scheme.toLowerCase(Locale.ROOT));
    }

    @Override
    default LockClient connect(URI uri, LockOptions options) {
        BackendUri parsed = BackendUri.parse(uri, options, parameters());
        return LockEngine.newClient(open(parsed), parsed.options());
    }
}
