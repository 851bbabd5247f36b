/**
 * The dlock Spring Boot starter: {@code autoconfigure} builds a {@link io.dlock.LockClient} from
 * {@code dlock.*} properties, {@code annotation} holds {@code @DistributedLock} and
 * {@code @ScheduledLock} and the current-lease accessor, {@code actuate} the health indicator and the
 * {@code dlock} actuator endpoint.
 */
@NullMarked
package io.dlock.spring.boot;

import org.jspecify.annotations.NullMarked;
