package io.dlock.spring.boot.internal;

import java.util.Locale;

/**
 * Backend URIs for logs and health details, with their secrets replaced by {@code ***}: the
 * password of the user info ({@code redis://user:***@host}, the user name kept) and the value of
 * any query parameter whose name contains {@code password}, {@code secret} or {@code token}
 * ({@code jdbc:postgresql://host/db?password=***}).
 *
 * <p>Core's own redaction ({@code BackendUri}'s and {@code ProviderLookup}'s) is not public, hence
 * this one.
 *
 * <p>Thread-safety: stateless.
 */
public final class UriRedaction {
    private UriRedaction() {}

    /**
     * The URI with its secrets replaced.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail; text that is
     * not a URI is redacted as far as it looks like one.
     *
     * @param uri the URI as the application wrote it
     * @return the URI without secrets
     */
    public static String redact(String uri) {
        int start = uri.indexOf("//");
        start = start < 0 ? 0 : start + 2;
        int end = uri.length();
        for (char c : new char[] {'/', '?', '#'}) {
            int i = uri.indexOf(c, start);
            if (i >= 0 && i < end) {
                end = i;
            }
        }
        String out = uri;
        int at = uri.lastIndexOf('@', end - 1);
        if (at >= start) {
            int colon = uri.indexOf(':', start);
            String user = colon >= 0 && colon < at ? uri.substring(start, colon) : uri.substring(start, at);
            out = uri.substring(0, start) + user + ":***" + uri.substring(at);
        }
        int q = out.indexOf('?');
        if (q < 0) {
            return out;
        }
        int hash = out.indexOf('#', q);
        String query = hash < 0 ? out.substring(q + 1) : out.substring(q + 1, hash);
        StringBuilder sb = new StringBuilder(out.substring(0, q + 1));
        String[] pairs = query.split("&", -1);
        for (int i = 0; i < pairs.length; i++) {
            if (i > 0) {
                sb.append('&');
            }
            String pair = pairs[i];
            int eq = pair.indexOf('=');
            String name = (eq < 0 ? pair : pair.substring(0, eq)).toLowerCase(Locale.ROOT);
            if (eq >= 0 && (name.contains("password") || name.contains("secret") || name.contains("token"))) {
                sb.append(pair, 0, eq + 1).append("***");
            } else {
                sb.append(pair);
            }
        }
        return hash < 0 ? sb.toString() : sb.append(out.substring(hash)).toString();
    }
}
