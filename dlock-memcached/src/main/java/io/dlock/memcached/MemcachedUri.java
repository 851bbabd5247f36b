package io.dlock.memcached;

import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * A Memcached URI taken apart: {@code memcached://host[:11211][,host:port...]}.
 *
 * <p>Backend parameters: {@code keyPrefix} (default {@value #DEFAULT_KEY_PREFIX}; 1 to {@value
 * #MAX_KEY_PREFIX} characters of {@code A-Z a-z 0-9 _ - . :}, so that every key dlock makes stays
 * within memcached's 250-byte limit) and {@code quarantine} (default: the lease time; how long
 * nothing is granted on a server after it is found to have lost its data; at least the lease time,
 * and it must be the longest lease time any client of the server uses).
 *
 * <p>User info ({@code memcached://user:password@host}) is memcached's ASCII-protocol authentication
 * (a server started with {@code -Y <auth file>}): every connection sends it first. It is not SASL,
 * which memcached offers over its binary protocol only.
 *
 * @param hosts the servers, in URI order
 * @param keyPrefix the prefix of every lock, waiter and counter key
 * @param quarantine how long a server that lost its data grants nothing
 * @param options the client's options
 * @param user the user for ASCII authentication, or null for none
 * @param password the password, or null for none (both or neither)
 */
record MemcachedUri(
        List<InetSocketAddress> hosts,
        String keyPrefix,
        Duration quarantine,
        LockOptions options,
        @Nullable String user,
        @Nullable String password) {

    static final String DEFAULT_KEY_PREFIX = "dlock";
    static final int DEFAULT_PORT = 11211;
    static final int MAX_KEY_PREFIX = 16;
    static final Set<String> PARAMETERS = Set.of("keyPrefix", "quarantine");

    /**
     * The longest lease: a key's expiry is the lease in whole seconds plus one, and memcached reads an
     * expiry of more than 30 days (2,592,000 s) as an absolute unix time.
     */
    static final Duration MAX_LEASE = Duration.ofSeconds(2_592_000 - 1);

    static MemcachedUri from(BackendUri uri) {
        if (uri.user() != null || uri.password() != null) {
            checkCredential("user name", uri.user(), uri);
            checkCredential("password", uri.password(), uri);
        }
        if (!uri.path().isEmpty()) {
            throw new IllegalArgumentException("memcached URI '" + uri + "' has a path ('/" + uri.path()
                    + "'); use ?keyPrefix= to separate applications");
        }
        List<InetSocketAddress> hosts = new ArrayList<>();
        for (String hp : uri.authority().split(",", -1)) {
            InetSocketAddress a = hostPort(hp.trim(), uri);
            if (hosts.contains(a)) {
                throw new IllegalArgumentException("memcached URI '" + uri + "' names " + hp + " twice");
            }
            hosts.add(a);
        }
        Duration lease = uri.options().leaseTime();
        if (lease.compareTo(Duration.ofSeconds(1)) < 0) {
            throw new IllegalArgumentException("parameter 'leaseTime' must be at least 1s on memcached (its expiry"
                    + " times are whole seconds): " + lease.toMillis() + "ms");
        }
        if (lease.compareTo(MAX_LEASE) > 0) {
            throw new IllegalArgumentException("parameter 'leaseTime' must be at most " + MAX_LEASE.toSeconds()
                    + "s on memcached (30 days less the second dlock adds to a key's expiry; memcached reads a longer"
                    + " expiry as a date in 1970 and stores the key already expired): " + lease.toSeconds() + "s");
        }
        Duration quarantine = uri.parameters().containsKey("quarantine")
                ? BackendUri.duration("quarantine", uri.parameters().get("quarantine"))
                : lease;
        if (quarantine.compareTo(lease) < 0) {
            throw new IllegalArgumentException("parameter 'quarantine' (" + quarantine.toMillis()
                    + " ms) must be at least leaseTime (" + lease.toMillis() + " ms)");
        }
        String prefix = checkKeyPrefix(uri.parameters().getOrDefault("keyPrefix", DEFAULT_KEY_PREFIX));
        return new MemcachedUri(List.copyOf(hosts), prefix, quarantine, uri.options(), uri.user(), uri.password());
    }

    /** memcached's auth line is "user password": neither may be empty or hold a space or a control character. */
    private static void checkCredential(String what, @Nullable String value, BackendUri uri) {
        if (value == null || value.isEmpty()) {
            throw new IllegalArgumentException("memcached URI '" + uri + "' has credentials without a " + what
                    + "; memcached's ASCII authentication (-Y) needs user:password@");
        }
        if (value.chars().anyMatch(c -> c <= ' ' || c == 0x7f)) {
            throw new IllegalArgumentException("memcached URI '" + uri + "': the " + what
                    + " contains a space or a control character, which memcached's authentication line cannot carry");
        }
    }

    /** Whether connections authenticate first. */
    boolean authenticates() {
        return user != null;
    }

    static String checkKeyPrefix(String prefix) {
        boolean ok = !prefix.isEmpty()
                && prefix.length() <= MAX_KEY_PREFIX
                && prefix.chars()
                        .allMatch(c -> (c >= 'a' && c <= 'z')
                                || (c >= 'A' && c <= 'Z')
                                || (c >= '0' && c <= '9')
                                || c == '_'
                                || c == '-'
                                || c == '.');
        // No ':' in a prefix: it ends the prefix in every key, so that no prefix's keys can be another's
        // (prefix 'app:l' with lock 'x' and prefix 'app' with lock 'l:x' would share 'app:l:l:x').
        if (!ok) {
            throw new IllegalArgumentException("parameter 'keyPrefix' must be 1 to " + MAX_KEY_PREFIX
                    + " characters of A-Z a-z 0-9 _ - . (no ':', which ends the prefix in every key; memcached keys"
                    + " are at most 250 bytes, lock names up to 200): '" + prefix + "'");
        }
        return prefix;
    }

    private static InetSocketAddress hostPort(String hp, BackendUri uri) {
        if (hp.isEmpty()) {
            throw new IllegalArgumentException("memcached URI '" + uri + "' has an empty host");
        }
        String host = hp;
        String port = null;
        if (hp.startsWith("[")) {
            int close = hp.indexOf(']');
            if (close < 0 || close + 1 < hp.length() && hp.charAt(close + 1) != ':') {
                throw new IllegalArgumentException("memcached URI '" + uri + "' has a malformed host '" + hp + "'");
            }
            host = hp.substring(1, close);
            port = close + 1 < hp.length() ? hp.substring(close + 2) : null;
        } else {
            int colon = hp.lastIndexOf(':');
            if (colon >= 0) {
                host = hp.substring(0, colon);
                port = hp.substring(colon + 1);
            }
        }
        if (host.isEmpty()) {
            throw new IllegalArgumentException("memcached URI '" + uri + "' has an empty host");
        }
        int p = DEFAULT_PORT;
        if (port != null) {
            try {
                p = Integer.parseInt(port);
                if (p < 1 || p > 65535) {
                    throw new NumberFormatException();
                }
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("memcached URI '" + uri + "' has an invalid port '" + port + "'", e);
            }
        }
        return InetSocketAddress.createUnresolved(host, p);
    }

    /** The hosts, comma-separated, for messages. */
    String hostList() {
        return String.join(
                ",",
                hosts.stream().map(a -> a.getHostString() + ":" + a.getPort()).toList());
    }

    /** Without the password. */
    @Override
    public String toString() {
        return "memcached://" + (user == null ? "" : user + ":***@") + hostList() + "?keyPrefix=" + keyPrefix;
    }
}
