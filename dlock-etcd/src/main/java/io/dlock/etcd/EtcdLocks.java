package io.dlock.etcd;

import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.core.LockEngine;
import io.etcd.jetcd.Client;
import java.time.Duration;
import java.util.Objects;

/**
 * dlock over a jetcd {@link Client} the application already has, for when its endpoints, TLS,
 * credentials or executors are set up in code rather than in a URI. Otherwise use {@link
 * LockClient#connect(String)} with an {@code etcd://} URI.
 *
 * <pre>{@code
 * Client etcd = Client.builder().endpoints("http://etcd:2379").build();   // yours
 * try (LockClient locks = EtcdLocks.connect(etcd, "dlock", LockOptions.defaults())) {
 *     ...
 * }
 * etcd.close();                                                           // still yours to close
 * }</pre>
 *
 * <p>dlock grants its own etcd lease through the client and revokes it, not the client, when the
 * {@link LockClient} closes.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class EtcdLocks {
    private EtcdLocks() {}

    /**
     * Connects dlock through {@code client}, keeping its keys under {@code namespace/}.
     *
     * <p>Blocking: until the cluster has answered and granted a lease, at most about twice the
     * connect timeout. Thread-safety: safe from any thread. On failure: {@link
     * IllegalArgumentException} for a bad namespace (nothing is sent); {@link LockBackendException}
     * if the cluster cannot be reached or refuses (the client is left as it was).
     *
     * @param client the application's jetcd client; not closed by dlock
     * @param namespace prefix of every key: printable ASCII without spaces, no empty segments
     * @param options dlock's options (lease time, renewal, ...)
     * @return a client that owns its etcd lease
     * @throws IllegalArgumentException if {@code namespace} is not valid
     * @throws LockBackendException if the cluster cannot be reached
     */
    public static LockClient connect(Client client, String namespace, LockOptions options) {
        return connect(client, namespace, Duration.ZERO, options);
    }

    /**
     * Connects dlock through {@code client} with a lock-delay: a lock whose holder is lost (its
     * lease expired or was revoked) rather than released is granted to nobody for {@code lockDelay}.
     *
     * <p>Blocking: until the cluster has answered and granted the leases. Thread-safety: safe from
     * any thread. On failure: {@link IllegalArgumentException} for a bad namespace or a negative
     * delay (nothing is sent); {@link LockBackendException} if the cluster cannot be reached.
     *
     * @param client the application's jetcd client; not closed by dlock
     * @param namespace prefix of every key
     * @param lockDelay how long a lost holder's lock stays ungranted; {@link Duration#ZERO} for none
     * @param options dlock's options
     * @return a client that owns its etcd leases
     * @throws IllegalArgumentException if {@code namespace} or {@code lockDelay} is not valid
     * @throws LockBackendException if the cluster cannot be reached
     */
    public static LockClient connect(Client client, String namespace, Duration lockDelay, LockOptions options) {
        Objects.requireNonNull(client, "client");
        Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(lockDelay, "lockDelay");
        Objects.requireNonNull(options, "options");
        EtcdUri uri = EtcdUri.handedIn(namespace, lockDelay, options);
        return LockEngine.newClient(EtcdBackend.connect(client, uri), options);
    }
}
