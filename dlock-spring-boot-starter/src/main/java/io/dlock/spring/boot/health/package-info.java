/**
 * Spring Boot 4 health support: the {@code dlock} health indicator on Spring Boot 4's {@code
 * spring-boot-health} module. Spring Boot 3.5's is in {@link io.dlock.spring.boot.actuate}.
 */
@NullMarked
package io.dlock.spring.boot.health;

import org.jspecify.annotations.NullMarked;
