package io.dlock.spring.boot.autoconfigure;

import io.dlock.LockClient;
import io.dlock.spring.boot.actuate.DLockEndpoint;
import io.dlock.spring.boot.actuate.DLockHealthIndicator;
import io.dlock.spring.boot.annotation.ActiveLocks;
import io.dlock.spring.boot.annotation.DistributedLockInterceptor;
import io.dlock.spring.boot.internal.LazyLockClient;
import io.dlock.spring.boot.internal.UriRedaction;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/**
 * The {@code dlock} health indicator (when a {@link LockClient} exists and
 * {@code management.health.dlock.enabled} is not false) and the {@code dlock} actuator endpoint
 * (when available: exposed through {@code management.endpoints.web.exposure.include}).
 *
 * <p>Thread-safety: Spring configuration, used once at startup.
 */
@AutoConfiguration(after = DLockAutoConfiguration.class)
@ConditionalOnClass({LockClient.class, HealthIndicator.class, ConditionalOnEnabledHealthIndicator.class})
public class DLockActuatorAutoConfiguration {

    /**
     * The health indicator, reported as {@code dlock}.
     *
     * @param client the application's lock client
     * @param properties {@code dlock.health.*}
     * @return the indicator
     */
    @Bean
    @ConditionalOnBean(LockClient.class)
    @ConditionalOnMissingBean(name = "dlockHealthIndicator")
    @ConditionalOnEnabledHealthIndicator("dlock")
    public DLockHealthIndicator dlockHealthIndicator(
            LockClient client, DLockProperties properties, BeanFactory beanFactory) {
        String backend;
        String uri = null;
        if (client instanceof LazyLockClient lazy) {
            backend = lazy.backend();
            uri = lazy.redactedUri();
        } else {
            backend = DistributedLockInterceptor.backendNameOf(client);
            String configured = properties.getUri();
            if (configured != null
                    && beanFactory.containsBean("dlockClient")
                    && beanFactory.getBean("dlockClient") == client) {
                uri = UriRedaction.redact(configured);
            }
        }
        return new DLockHealthIndicator(
                client,
                properties.getHealth().getLockName(),
                properties.getHealth().getTimeout(),
                properties.getHealth().getProbeInterval(),
                backend,
                uri);
    }

    /**
     * The {@code dlock} endpoint.
     *
     * @param active the tracker the aspect fills
     * @return the endpoint
     */
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnAvailableEndpoint(endpoint = DLockEndpoint.class)
    public DLockEndpoint dlockEndpoint(ActiveLocks active) {
        return new DLockEndpoint(active);
    }
}
