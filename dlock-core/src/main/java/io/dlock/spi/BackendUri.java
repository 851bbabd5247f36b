package io.dlock.spi;

import io.dlock.LockOptions;
import io.dlock.RetryPolicy;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.jspecify.annotations.Nullable;

/**
 * A backend URI taken apart: hosts, path, credentials, the client's options with the common query
 * parameters applied, and the backend's own parameters.
 *
 * <p>Common parameters: {@code leaseTime}, {@code sessionTimeout}, {@code connectTimeout} and the
 * retry policy's {@code retryBaseSleep}, {@code retryMaxSleep} (durations such as {@code 3s},
 * {@code 1500ms}, {@code 2m}, {@code 1h}, or ISO-8601 {@code PT3S}), {@code retryMaxRetries},
 * {@code callbackThreads} (integers), {@code fair}, {@code renewal} and {@code reentrant} ({@code true}/{@code false}).
 *
 * @param scheme the scheme in lower case
 * @param authority the hosts part, for example {@code h1:2181,h2:2181}, without user info
 * @param path the path without its leading slash, possibly empty
 * @param user the user name from the user info, or null
 * @param password the password from the user info, or null
 * @param options the client's options with common parameters applied
 * @param parameters the backend's own parameters, by name
 */
public record BackendUri(
        String scheme,
        String authority,
        String path,
        @Nullable String user,
        @Nullable String password,
        LockOptions options,
        Map<String, String> parameters) {

    /** Common parameter names, applied to {@link LockOptions}. */
    public static final Set<String> COMMON_PARAMETERS = Set.of(
            "leaseTime",
            "sessionTimeout",
            "connectTimeout",
            "fair",
            "renewal",
            "reentrant",
            "retryBaseSleep",
            "retryMaxSleep",
            "retryMaxRetries",
            "callbackThreads",
            "localQueueing",
            "maxLocalHandoffs");

    private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s|m|h)");

    /** Hides the password. */
    @Override
    public String toString() {
        return scheme + "://" + (user == null ? "" : user + (password == null ? "" : ":***") + "@") + authority + "/"
                + path + (parameters.isEmpty() ? "" : "?" + parameters);
    }

    /**
     * Parses {@code uri}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws, nothing changed.
     *
     * @param uri the URI the application gave
     * @param base the options the application gave; query parameters override them
     * @param backendParameters the names of the backend's own parameters
     * @return the parsed URI
     * @throws IllegalArgumentException naming the parameter, for an unknown parameter or a malformed
     *     value, or when the URI has no host
     */
    public static BackendUri parse(URI uri, LockOptions base, Set<String> backendParameters) {
        String scheme = uri.getScheme().toLowerCase(Locale.ROOT);
        String authority = uri.getRawAuthority();
        if (authority == null || authority.isEmpty() || authority.endsWith("@")) {
            throw new IllegalArgumentException("dlock URI '" + redacted(uri) + "' has no host");
        }
        @Nullable String user = null;
        @Nullable String password = null;
        int at = authority.lastIndexOf('@');
        if (at >= 0) {
            String info = authority.substring(0, at);
            authority = authority.substring(at + 1);
            int colon = info.indexOf(':');
            user = decode(colon < 0 ? info : info.substring(0, colon));
            password = colon < 0 ? null : decode(info.substring(colon + 1));
        }
        String path = uri.getRawPath() == null ? "" : decode(uri.getRawPath());
        while (path.startsWith("/")) {
            path = path.substring(1);
        }
        LockOptions.Builder options = base.toBuilder();
        Map<String, String> own = new LinkedHashMap<>();
        RetryPolicy retry = base.retryPolicy();
        Duration retryBase = retry.baseSleep();
        Duration retryMax = retry.maxSleep();
        int retries = retry.maxRetries();
        String query = uri.getRawQuery();
        if (query != null && !query.isEmpty()) {
            for (String pair : query.split("&", -1)) {
                if (pair.isEmpty()) {
                    continue;
                }
                int eq = pair.indexOf('=');
                String name = decode(eq < 0 ? pair : pair.substring(0, eq));
                String value = eq < 0 ? "" : decode(pair.substring(eq + 1));
                switch (name) {
                    case "leaseTime" -> options.leaseTime(duration(name, value));
                    case "sessionTimeout" -> options.sessionTimeout(duration(name, value));
                    case "connectTimeout" -> options.connectTimeout(duration(name, value));
                    case "fair" -> options.fair(bool(name, value));
                    case "renewal" -> options.renewal(bool(name, value));
                    case "reentrant" -> options.reentrant(bool(name, value));
                    case "retryBaseSleep" -> retryBase = duration(name, value);
                    case "retryMaxSleep" -> retryMax = duration(name, value);
                    case "retryMaxRetries" -> retries = integer(name, value);
                    case "callbackThreads" -> options.callbackThreads(integer(name, value));
                    case "localQueueing" -> options.localQueueing(bool(name, value));
                    case "maxLocalHandoffs" -> options.maxLocalHandoffs(integer(name, value));
                    default -> {
                        if (!backendParameters.contains(name)) {
                            Set<String> known = new TreeSet<>(COMMON_PARAMETERS);
                            known.addAll(backendParameters);
                            throw new IllegalArgumentException("unknown parameter '" + name + "' in dlock URI '"
                                    + redacted(uri) + "'; known: " + known);
                        }
                        own.put(name, value);
                    }
                }
            }
        }
        LockOptions built;
        try {
            retryBound("retryBaseSleep", retryBase);
            retryBound("retryMaxSleep", retryMax);
            if (retryMax.compareTo(retryBase) < 0) {
                throw new IllegalArgumentException(
                        "retryMaxSleep " + retryMax + " must not be less than retryBaseSleep " + retryBase);
            }
            options.retryPolicy(RetryPolicy.exponentialBackoff(retryBase, retryMax, retries));
            built = options.build();
        } catch (IllegalStateException | IllegalArgumentException e) {
            throw new IllegalArgumentException("dlock URI '" + redacted(uri) + "': " + e.getMessage(), e);
        }
        return new BackendUri(scheme, authority, path, user, password, built, Collections.unmodifiableMap(own));
    }

    /** The bounds of the other durations (1 ms to 365 days), named as the URI names them. */
    private static void retryBound(String name, Duration value) {
        if (value.compareTo(Duration.ofMillis(1)) < 0 || value.compareTo(Duration.ofDays(365)) > 0) {
            throw new IllegalArgumentException(name + " must be between 1ms and 365 days: " + value);
        }
    }

    /**
     * Parses a duration written {@code 3s}, {@code 1500ms}, {@code 2m}, {@code 1h} or ISO-8601.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws.
     *
     * @param name the parameter's name, for the message
     * @param value the text
     * @return the duration
     * @throws IllegalArgumentException naming the parameter if the text is not a non-negative
     *     duration
     */
    public static Duration duration(String name, String value) {
        Matcher m = DURATION.matcher(value.trim());
        try {
            if (m.matches()) {
                long amount = Long.parseLong(m.group(1));
                return switch (m.group(2)) {
                    case "ms" -> Duration.ofMillis(amount);
                    case "s" -> Duration.ofSeconds(amount);
                    case "m" -> Duration.ofMinutes(amount);
                    default -> Duration.ofHours(amount);
                };
            }
            Duration d = Duration.parse(value.trim());
            if (!d.isNegative()) {
                return d;
            }
        } catch (DateTimeParseException | NumberFormatException | ArithmeticException e) {
            // fall through to the message below
        }
        throw new IllegalArgumentException(
                "parameter '" + name + "' must be a duration such as 3s, 1500ms, 2m: '" + value + "'");
    }

    private static boolean bool(String name, String value) {
        return switch (value.toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException(
                    "parameter '" + name + "' must be true or false: '" + value + "'");
        };
    }

    private static int integer(String name, String value) {
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("parameter '" + name + "' must be an integer: '" + value + "'", e);
        }
    }

    /** Percent-decoding only: a '+' stays a '+' (passwords are often base64). */
    private static String decode(String s) {
        return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    }

    /** The URI for messages: the user info, password and all, replaced by {@code user:***}. */
    private static String redacted(URI uri) {
        String authority = uri.getRawAuthority() == null ? "" : uri.getRawAuthority();
        int at = authority.lastIndexOf('@');
        if (at >= 0) {
            int colon = authority.indexOf(':');
            String user = colon >= 0 && colon < at ? authority.substring(0, colon) : authority.substring(0, at);
            authority = user + ":***" + authority.substring(at);
        }
        return uri.getScheme() + "://" + authority + (uri.getRawPath() == null ? "" : uri.getRawPath())
                + (uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery());
    }
}
