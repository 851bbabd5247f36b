package io.dlock.spring.boot.autoconfigure;

import io.dlock.LockClient;
import io.dlock.spring.boot.health.DLockHealthIndicator;
import io.dlock.spring.boot.leader.LeaderElections;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator;
import org.springframework.context.annotation.Bean;

/**
 * The {@code dlock} health indicator on Spring Boot 4 (module {@code spring-boot-health}, {@code org.springframework.boot.health}), when a {@link LockClient} exists and {@code
 * management.health.dlock.enabled} is not false. On Spring Boot 3.5, {@link DLockActuatorHealthAutoConfiguration} registers it instead:
 * the class names below are those of one line only, so exactly one of the two applies.
 *
 * <p>Thread-safety: Spring configuration, used once at startup.
 */
@AutoConfiguration(after = DLockAutoConfiguration.class)
@ConditionalOnClass(
        value = LockClient.class,
        name = {
            "org.springframework.boot.health.contributor.HealthIndicator",
            "org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator"
        })
public class DLockHealthAutoConfiguration {

    /**
     * The health indicator, reported as {@code dlock}.
     *
     * @param client the application's lock client
     * @param properties {@code dlock.health.*}
     * @param beanFactory to tell the starter's client from one the application defined
     * @param elections the application's leader elections, whose part the details show
     * @return the indicator
     */
    @Bean
    @ConditionalOnBean(LockClient.class)
    @ConditionalOnMissingBean(name = "dlockHealthIndicator")
    @ConditionalOnEnabledHealthIndicator("dlock")
    public DLockHealthIndicator dlockHealthIndicator(
            LockClient client,
            DLockProperties properties,
            BeanFactory beanFactory,
            ObjectProvider<LeaderElections> elections) {
        HealthDetails details = HealthDetails.of(client, properties, beanFactory);
        DLockHealthIndicator indicator = new DLockHealthIndicator(
                client,
                properties.getHealth().getLockName(),
                properties.getHealth().getTimeout(),
                properties.getHealth().getProbeInterval(),
                details.backend(),
                details.redactedUri());
        LeaderElections e = elections.getIfUnique();
        return e == null ? indicator : indicator.withDetails(e::healthDetails);
    }
}
