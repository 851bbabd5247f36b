/** Actuator support: the {@code dlock} health indicator and the {@code /actuator/dlock} endpoint. */
package io.dlock.spring.boot.actuate;
