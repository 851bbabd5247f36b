package io.dlock.benchmarks.torture;

import io.dlock.cli.internal.DurationConverter;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/** Reads what an anchor worker needs from the dlock URI the torture gives its workers. */
final class AnchorUris {
    private AnchorUris() {}

    /** {@code --uri}, checked to have {@code scheme}, one host and a port. */
    static URI uri(Map<String, String> options, String scheme) {
        String text = options.get("uri");
        if (text == null) {
            throw new IllegalArgumentException("--uri is required");
        }
        URI uri = URI.create(text);
        if (!scheme.equals(uri.getScheme()) || uri.getHost() == null || uri.getPort() < 0) {
            throw new IllegalArgumentException(
                    "an anchor worker needs " + scheme + "://host:port (one server), got " + text);
        }
        return uri;
    }

    /** A query parameter's value. */
    static Optional<String> query(URI uri, String name) {
        String query = uri.getRawQuery();
        if (query == null) {
            return Optional.empty();
        }
        for (String pair : query.split("&")) {
            int eq = pair.indexOf('=');
            if (eq > 0 && pair.substring(0, eq).equals(name)) {
                return Optional.of(pair.substring(eq + 1));
            }
        }
        return Optional.empty();
    }

    /** A duration query parameter ({@code 2s}, {@code 1500ms}), required. */
    static Duration duration(URI uri, String name) {
        return DurationConverter.parse(
                query(uri, name).orElseThrow(() -> new IllegalArgumentException(uri + " lacks " + name)));
    }

    /** {@code --lock}, required. */
    static String lockName(Map<String, String> options) {
        String lock = options.get("lock");
        if (lock == null || lock.isEmpty() || lock.contains(",")) {
            throw new IllegalArgumentException("--lock must be one lock name, got " + lock);
        }
        return lock;
    }
}
