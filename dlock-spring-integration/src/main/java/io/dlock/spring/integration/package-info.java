/**
 * Spring Integration's lock abstractions on dlock: {@link io.dlock.spring.integration.DLockRegistry} is a
 * {@code LockRegistry} (expirable and renewable) whose locks are dlock locks on any backend, for
 * {@code LockRegistryLeaderInitiator}, the aggregator, the idempotent receiver and every other user of a
 * {@code LockRegistry}.
 */
@NullMarked
package io.dlock.spring.integration;

import org.jspecify.annotations.NullMarked;
