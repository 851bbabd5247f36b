package io.dlock.testkit;

import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.core.Diagnostics;
import io.dlock.spi.LockInspector;
import java.time.Duration;

/**
 * Marks a test's fresh server as a new deployment, as {@code dlock init} does, so that its first
 * locks are granted at once: a server without dlock's markers (every server a test has just
 * started) is otherwise fenced for one lease, because it cannot be told from one that lost its
 * data. Redis (the key prefix, every slot of a Cluster), Memcached and etcd keep such a fence;
 * ZooKeeper and SQL do not, and marking them does nothing.
 *
 * <pre>{@code
 * @BeforeAll
 * static void server(RedisServer started) {
 *     NewDeployment.mark(started.uri());
 * }
 * }</pre>
 *
 * <p>Only for servers a test started itself: marking a server that lost its data would let a new
 * holder in while an old one may still count its lease valid.
 */
public final class NewDeployment {
    private NewDeployment() {}

    /**
     * Marks the namespace {@code uri} names (key prefix, etcd namespace, Memcached servers) as new.
     *
     * <p>Blocking: a connect and a few requests, at most a few times the connect timeout (5 s).
     * Thread-safety: safe from any thread. On failure: throws; a refusal changes nothing.
     *
     * @param uri a dlock URI, as {@link LockClient#connect(String)} takes it
     * @return what was done, one line
     * @throws IllegalStateException if the namespace was used before (anything written under it)
     * @throws io.dlock.LockBackendException if the server cannot be reached
     * @throws IllegalArgumentException if the URI is invalid
     */
    public static String mark(String uri) {
        try (LockClient client = LockClient.connect(
                uri, LockOptions.builder().connectTimeout(Duration.ofSeconds(5)).build())) {
            return Diagnostics.inspector(client)
                    .map(LockInspector::initialize)
                    .orElse("nothing to do: this backend offers no inspector");
        }
    }
}
