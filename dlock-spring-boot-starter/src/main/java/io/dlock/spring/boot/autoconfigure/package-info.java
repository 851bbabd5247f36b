/**
 * Auto-configuration: {@link io.dlock.spring.boot.autoconfigure.DLockAutoConfiguration} (the client,
 * the annotations, Micrometer), {@link io.dlock.spring.boot.autoconfigure.DLockActuatorAutoConfiguration}
 * (the endpoint), the health indicator of each Spring Boot line ({@link
 * io.dlock.spring.boot.autoconfigure.DLockActuatorHealthAutoConfiguration} on Boot 3.5, {@link
 * io.dlock.spring.boot.autoconfigure.DLockHealthAutoConfiguration} on Boot 4, each guarded by the
 * other line's missing classes) and the {@code dlock.*} properties.
 */
@NullMarked
package io.dlock.spring.boot.autoconfigure;

import org.jspecify.annotations.NullMarked;
