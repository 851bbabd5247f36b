package io.dlock.spring.boot.autoconfigure;

import io.dlock.LockClient;
import io.dlock.spring.boot.actuate.DLockEndpoint;
import io.dlock.spring.boot.annotation.ActiveLocks;
import io.dlock.spring.boot.leader.LeaderElections;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The {@code dlock} actuator endpoint (when available: exposed through {@code
 * management.endpoints.web.exposure.include}), the same on Spring Boot 3.5 and 4. The health
 * indicator comes from {@link DLockActuatorHealthAutoConfiguration} (Boot 3.5) or {@link
 * DLockHealthAutoConfiguration} (Boot 4).
 *
 * <p>Thread-safety: Spring configuration, used once at startup.
 */
@AutoConfiguration(after = DLockAutoConfiguration.class)
@ConditionalOnClass(
        value = LockClient.class,
        name = {
            "org.springframework.boot.actuate.endpoint.annotation.Endpoint",
            "org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint"
        })
public class DLockActuatorAutoConfiguration {

    /**
     * The {@code dlock} endpoint.
     *
     * @param active the tracker the aspect fills
     * @param elections the application's leader elections, if any
     * @return the endpoint
     */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnAvailableEndpoint(endpoint = DLockEndpoint.class)
    public DLockEndpoint dlockEndpoint(ActiveLocks active, ObjectProvider<LeaderElections> elections) {
        return new DLockEndpoint(active, elections.getIfUnique());
    }
}
