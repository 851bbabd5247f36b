/**
 * Project Reactor acquisition over {@code acquireAsync}: {@link io.dlock.reactor.ReactorLocks} turns
 * a lock or a semaphore into a lazy {@code Mono<Lease>} whose cancellation withdraws the attempt, and
 * runs a {@code Publisher} under a lock with {@code usingWhen}, releasing it on complete, error or
 * cancel.
 */
@NullMarked
package io.dlock.reactor;

import org.jspecify.annotations.NullMarked;
