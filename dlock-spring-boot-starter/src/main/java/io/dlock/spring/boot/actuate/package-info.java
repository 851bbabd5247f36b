/** Actuator support: the {@code dlock} health indicator and the {@code /actuator/dlock} endpoint. */
@NullMarked
package io.dlock.spring.boot.actuate;

import org.jspecify.annotations.NullMarked;
