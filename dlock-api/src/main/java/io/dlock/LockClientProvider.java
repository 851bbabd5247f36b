package io.dlock;

import java.net.URI;

/**
 * For backend modules: the hook through which {@link LockClient#connect(String)} finds a backend by
 * URI scheme. A backend module registers its implementation in {@code
 * META-INF/services/io.dlock.LockClientProvider}; applications never call it directly.
 *
 * <p>Thread-safety: implementations must be safe for use from any thread.
 */
public interface LockClientProvider {

    /**
     * Whether this provider handles {@code uri}, judged by its scheme alone.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: returns false.
     *
     * @param uri the URI the application passed to {@link LockClient#connect(String)}
     * @return true if {@link #connect(URI, LockOptions)} should be called with it
     */
    boolean supports(URI uri);

    /**
     * Connects to the backend named by {@code uri}.
     *
     * <p>Blocking: until connected or the connect timeout passes. Thread-safety: safe from any
     * thread. On failure: throws, and every resource opened so far is closed.
     *
     * @param uri the backend's URI; query parameters override {@code options}
     * @param options the client's options
     * @return a connected client
     * @throws IllegalArgumentException if the URI or one of its parameters is malformed or unknown
     * @throws LockBackendException if the server cannot be reached or refuses the credentials
     */
    LockClient connect(URI uri, LockOptions options);
}
