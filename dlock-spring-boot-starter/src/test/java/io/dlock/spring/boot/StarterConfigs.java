package io.dlock.spring.boot;

import io.dlock.spring.boot.autoconfigure.DLockActuatorAutoConfiguration;
import io.dlock.spring.boot.autoconfigure.DLockActuatorHealthAutoConfiguration;
import io.dlock.spring.boot.autoconfigure.DLockAutoConfiguration;
import io.dlock.spring.boot.autoconfigure.DLockHealthAutoConfiguration;
import org.springframework.boot.autoconfigure.AutoConfigurations;

/** The starter's auto-configurations for the tests' context runners. */
final class StarterConfigs {
    /**
     * All of them, as the imports file lists them: both Spring Boot lines' health configurations,
     * of which the class path lets exactly one register its indicator.
     */
    static final AutoConfigurations ALL = AutoConfigurations.of(
            DLockAutoConfiguration.class,
            DLockActuatorAutoConfiguration.class,
            DLockActuatorHealthAutoConfiguration.class,
            DLockHealthAutoConfiguration.class);

    private StarterConfigs() {}
}
