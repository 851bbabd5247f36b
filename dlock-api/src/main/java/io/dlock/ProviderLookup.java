package io.dlock;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.ServiceLoader;
import java.util.TreeSet;

/** Finds the backend for a URI through {@link ServiceLoader}; behind {@link LockClient#connect}. */
final class ProviderLookup {
    /** Backend modules by URI scheme, to name the module to add when none is on the classpath. */
    static final Map<String, String> MODULES_BY_SCHEME = Map.of(
            "zookeeper", "dlock-zookeeper",
            "redis", "dlock-redis",
            "rediss", "dlock-redis",
            "redis-sentinel", "dlock-redis",
            "redis-cluster", "dlock-redis",
            "jdbc", "dlock-jdbc",
            "etcd", "dlock-etcd",
            "memcached", "dlock-memcached");

    private ProviderLookup() {}

    static LockClient connect(String uri, LockOptions options) {
        Objects.requireNonNull(uri, "uri");
        Objects.requireNonNull(options, "options");
        URI parsed;
        try {
            parsed = new URI(uri);
        } catch (URISyntaxException e) {
            // No cause: URISyntaxException's message repeats the input, password included.
            throw new IllegalArgumentException("malformed dlock URI '" + redact(uri) + "': " + e.getReason()
                    + (e.getIndex() >= 0 ? " at index " + e.getIndex() : ""));
        }
        String scheme = parsed.getScheme();
        if (scheme == null) {
            throw new IllegalArgumentException("dlock URI '" + redact(uri) + "' has no scheme; expected one of "
                    + new TreeSet<>(MODULES_BY_SCHEME.keySet()));
        }
        List<String> seen = new ArrayList<>();
        for (LockClientProvider provider : ServiceLoader.load(LockClientProvider.class)) {
            if (provider.supports(parsed)) {
                return provider.connect(parsed, options);
            }
            seen.add(provider.getClass().getName());
        }
        String module = MODULES_BY_SCHEME.get(scheme.toLowerCase(Locale.ROOT));
        if (module == null) {
            throw new IllegalArgumentException("unknown dlock URI scheme '" + scheme + "' in '" + redact(uri)
                    + "'; expected one of " + new TreeSet<>(MODULES_BY_SCHEME.keySet()));
        }
        throw new IllegalArgumentException("no dlock backend for '" + scheme + "://' on the classpath: add "
                + "io.dlock:" + module + " (providers found: " + seen + ")");
    }

    /**
     * Hides the password of a URI's user info, with or without a scheme: everything between the
     * user name's colon and the authority's last {@code @} (passwords may contain {@code @}).
     */
    static String redact(String uri) {
        int start = uri.indexOf("//");
        start = start < 0 ? 0 : start + 2;
        int end = uri.length();
        for (char c : new char[] {'/', '?', '#'}) {
            int i = uri.indexOf(c, start);
            if (i >= 0 && i < end) {
                end = i;
            }
        }
        int at = uri.lastIndexOf('@', end - 1);
        if (at < start) {
            return uri;
        }
        int colon = uri.indexOf(':', start);
        String user = colon >= 0 && colon < at ? uri.substring(start, colon) : uri.substring(start, at);
        return uri.substring(0, start) + user + ":***" + uri.substring(at);
    }
}
