/**
 * {@code @DistributedLock} and {@code @ScheduledLock} on bean methods, the current-lease accessor
 * {@link io.dlock.spring.boot.annotation.DistributedLocks}, and the tracking of the application's
 * held and waiting locks ({@link io.dlock.spring.boot.annotation.ActiveLocks}). The interceptor and
 * the advisor are public only so that the auto-configuration can create them.
 */
@NullMarked
package io.dlock.spring.boot.annotation;

import org.jspecify.annotations.NullMarked;
