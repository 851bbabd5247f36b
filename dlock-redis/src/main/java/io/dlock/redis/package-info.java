/**
 * The Redis backend: {@code redis://}, {@code rediss://}, {@code redis-sentinel://} and {@code
 * redis-cluster://}, on the Lettuce client. Each lock is a queue kept in three keys of one Cluster
 * slot and changed only by Lua scripts (see {@link io.dlock.redis.RedisScripts}); grants are leases
 * with a deadline on the server, and fencing tokens come from a counter bumped in the granting
 * script.
 *
 * <p>Internal apart from the service provider: no class here is for direct use.
 */
@NullMarked
package io.dlock.redis;

import org.jspecify.annotations.NullMarked;
