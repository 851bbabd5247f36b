/**
 * Auto-configuration: {@link io.dlock.spring.boot.autoconfigure.DLockAutoConfiguration} (the client,
 * the annotations, Micrometer), {@link io.dlock.spring.boot.autoconfigure.DLockActuatorAutoConfiguration}
 * (health indicator and endpoint) and the {@code dlock.*} properties.
 */
@NullMarked
package io.dlock.spring.boot.autoconfigure;

import org.jspecify.annotations.NullMarked;
