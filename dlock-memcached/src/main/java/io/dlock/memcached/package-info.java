/**
 * The Memcached backend: {@code memcached://host:11211[,host:port]}, on a small meta-protocol
 * client of dlock's own. A lock is one key made with {@code add}, released and renewed only by its
 * owner through its CAS value, fenced by an {@code incr} counter with a floor, and guarded against
 * server data loss by a boot marker (see {@link io.dlock.memcached.DataLossGuard}).
 *
 * <p>Internal apart from the service provider: no class here is for direct use.
 */
@NullMarked
package io.dlock.memcached;

import org.jspecify.annotations.NullMarked;
