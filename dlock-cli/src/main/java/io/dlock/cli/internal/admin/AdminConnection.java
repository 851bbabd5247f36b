package io.dlock.cli.internal.admin;

import io.dlock.LockClientProvider;
import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockBackendProvider;
import io.dlock.spi.LockInspector;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;

/**
 * A backend opened for an operator command, without the engine: its inspector reads and changes
 * the server's records directly. Closing it ends its connection (and, on ZooKeeper, its session).
 *
 * <p>Thread-safety: the inspector is thread-safe; open and close from one thread.
 */
public final class AdminConnection implements AutoCloseable {
    private final LockBackend backend;
    private final LockInspector inspector;

    private AdminConnection(LockBackend backend, LockInspector inspector) {
        this.backend = backend;
        this.inspector = inspector;
    }

    /**
     * Connects to the server {@code uri} names.
     *
     * @param uri a dlock URI, as {@code LockClient.connect} takes it
     * @param connectTimeout how long to try to reach the server
     * @return the open connection
     * @throws IllegalArgumentException if the URI is malformed, names no backend on the class path,
     *     or names one that offers no inspection
     * @throws io.dlock.LockBackendException if the server cannot be reached
     */
    public static AdminConnection open(String uri, Duration connectTimeout) {
        URI parsed;
        try {
            parsed = new URI(uri);
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException("malformed dlock URI '" + redact(uri) + "': " + e.getReason());
        }
        if (parsed.getScheme() == null) {
            throw new IllegalArgumentException("dlock URI '" + redact(uri)
                    + "' has no scheme: write it like redis://host:6379 or zookeeper://host:2181/namespace");
        }
        List<String> schemes = new ArrayList<>();
        for (LockClientProvider p : ServiceLoader.load(LockClientProvider.class)) {
            if (p instanceof LockBackendProvider provider) {
                schemes.addAll(provider.schemes());
                if (provider.supports(parsed)) {
                    LockOptions options =
                            LockOptions.builder().connectTimeout(connectTimeout).build();
                    // An opaque URI (jdbc:postgresql://…) has no authority for BackendUri.parse: its
                    // provider gets the scheme-specific part as the authority and parses it itself.
                    BackendUri backendUri = parsed.isOpaque()
                            ? new BackendUri(
                                    parsed.getScheme(),
                                    parsed.getRawSchemeSpecificPart(),
                                    "",
                                    null,
                                    null,
                                    options,
                                    java.util.Map.of())
                            : BackendUri.parse(parsed, options, provider.parameters());
                    LockBackend backend = provider.open(backendUri);
                    var inspector = backend.inspector();
                    if (inspector.isEmpty()) {
                        backend.close();
                        throw new IllegalArgumentException(
                                "the " + backend.name() + " backend offers no inspection in this version");
                    }
                    return new AdminConnection(backend, inspector.get());
                }
            }
        }
        throw new IllegalArgumentException("no dlock backend for '" + parsed.getScheme() + ":' in '" + redact(uri)
                + "'; schemes on the class path: " + new java.util.TreeSet<>(schemes));
    }

    /**
     * The backend's inspector.
     *
     * @return the inspector
     */
    public LockInspector inspector() {
        return inspector;
    }

    /**
     * The backend's name.
     *
     * @return for example {@code redis}
     */
    public String backendName() {
        return backend.name();
    }

    @Override
    public void close() {
        backend.close();
    }

    /** Hides a URI's password. */
    public static String redact(String uri) {
        return uri.replaceAll("(//[^/:@?#]*:)[^/?#]*@", "$1***@");
    }
}
