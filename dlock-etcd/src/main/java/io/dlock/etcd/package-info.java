/**
 * The etcd v3 backend on the jetcd client: a lock entry is a key attached to the client's one
 * lease, the lowest create revision holds, a waiter watches only the key just before its own, and
 * the fencing token is the holder key's create revision. {@link io.dlock.etcd.EtcdLocks} connects
 * through a jetcd {@code Client} the application already has; otherwise use {@code
 * LockClient.connect("etcd://host:2379/namespace")}.
 */
@NullMarked
package io.dlock.etcd;

import org.jspecify.annotations.NullMarked;
