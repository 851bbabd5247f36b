package io.dlock.spring.boot.autoconfigure;

import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.spring.boot.annotation.ActiveLocks;
import io.dlock.spring.boot.annotation.DistributedLockAdvisor;
import io.dlock.spring.boot.annotation.DistributedLockInterceptor;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import java.util.Objects;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Role;
import org.springframework.core.type.AnnotationMetadata;

/**
 * Auto-configures a {@link LockClient} from {@code dlock.uri} and the other {@code dlock.*}
 * properties ({@link DLockProperties}), binds the application's Micrometer {@code MeterRegistry} and
 * {@code ObservationRegistry} to it, and applies {@code @DistributedLock}/{@code @ScheduledLock} to
 * bean methods.
 *
 * <p>The client backs off when the application defines its own {@link LockClient} bean (which the
 * annotations then use) and is not created without {@code dlock.uri}. It is closed when the context
 * closes, which releases every lease it holds. An annotated method with no client available fails
 * the startup.
 *
 * <p>Thread-safety: Spring configuration, used once at startup.
 */
@AutoConfiguration(
        afterName = {
            "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
            "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration",
            "org.springframework.boot.actuate.autoconfigure.observation.ObservationAutoConfiguration"
        })
@ConditionalOnClass(LockClient.class)
@EnableConfigurationProperties(DLockProperties.class)
@Import(DLockAutoConfiguration.AutoProxyRegistrar.class)
public class DLockAutoConfiguration {

    /**
     * The lock client for {@code dlock.uri}; connects at startup.
     *
     * <p>Blocking: up to {@code dlock.connect-timeout} while connecting. Thread-safety: the client
     * is thread-safe. On failure: a bad URI or option is an {@link IllegalArgumentException} and an
     * unreachable backend a {@link io.dlock.LockBackendException}; either fails the startup.
     *
     * @param properties the {@code dlock.*} properties
     * @param customizers option customizers, applied in order after the properties
     * @return the connected client, closed when the context closes
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(LockClient.class)
    @ConditionalOnProperty(prefix = "dlock", name = "uri")
    public LockClient dlockClient(DLockProperties properties, ObjectProvider<LockOptionsCustomizer> customizers) {
        LockOptions.Builder options = properties.toOptions();
        customizers.orderedStream().forEach(c -> c.customize(options));
        // @ConditionalOnProperty: dlock.uri is set
        return LockClient.connect(Objects.requireNonNull(properties.getUri(), "dlock.uri"), options.build());
    }

    /**
     * The application's held and waiting annotated calls, for the actuator endpoint.
     *
     * @return the tracker
     */
    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    public static ActiveLocks dlockActiveLocks() {
        return new ActiveLocks();
    }

    /**
     * The aspect; it looks the client up at the first call or validation.
     *
     * @param client the application's lock client, if any
     * @param active the tracker
     * @param beanFactory resolves {@code @bean} references in SpEL keys
     * @return the interceptor, closed with the context
     */
    @Bean(destroyMethod = "close")
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    public static DistributedLockInterceptor dlockInterceptor(
            ObjectProvider<LockClient> client, ActiveLocks active, BeanFactory beanFactory) {
        return new DistributedLockInterceptor(client::getIfUnique, active, beanFactory);
    }

    /**
     * The advisor that proxies annotated beans.
     *
     * @param interceptor the aspect
     * @return the advisor
     */
    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    public static DistributedLockAdvisor dlockAdvisor(DistributedLockInterceptor interceptor) {
        return new DistributedLockAdvisor(interceptor);
    }

    /**
     * Checks, once every singleton exists, that annotated methods have a client and valid constant
     * lock names; fails the startup otherwise.
     *
     * @param interceptor the aspect
     * @return the check
     */
    @Bean
    public static SmartInitializingSingleton dlockAnnotationCheck(DistributedLockInterceptor interceptor) {
        return interceptor::validate;
    }

    /** Binds the application's {@code MeterRegistry} to the auto-configured client. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MeterRegistry.class)
    @ConditionalOnProperty(prefix = "dlock.metrics", name = "enabled", matchIfMissing = true)
    static class MetricsConfiguration {
        @Bean
        LockOptionsCustomizer dlockMetricsCustomizer(ObjectProvider<MeterRegistry> registry) {
            return options -> {
                MeterRegistry r = registry.getIfUnique();
                if (r != null) {
                    options.metricsRegistry(r);
                }
            };
        }
    }

    /**
     * Makes each acquire of the auto-configured client an observation in the application's {@code
     * ObservationRegistry} (so traces show lock waits). Spring Boot's registry records the {@code
     * dlock.acquire} timer from it when a {@code MeterRegistry} exists, in place of the client's own.
     */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(ObservationRegistry.class)
    @ConditionalOnProperty(prefix = "dlock.observations", name = "enabled", matchIfMissing = true)
    static class ObservationConfiguration {
        @Bean
        LockOptionsCustomizer dlockObservationCustomizer(ObjectProvider<ObservationRegistry> registry) {
            return options -> {
                ObservationRegistry r = registry.getIfUnique();
                if (r != null) {
                    options.observationRegistry(r);
                }
            };
        }
    }

    /**
     * Registers Spring's infrastructure auto-proxy creator (as {@code @EnableTransactionManagement}
     * does) when the application has none, with class proxies as Spring Boot defaults to.
     */
    static class AutoProxyRegistrar implements ImportBeanDefinitionRegistrar {
        @Override
        public void registerBeanDefinitions(AnnotationMetadata metadata, BeanDefinitionRegistry registry) {
            AopConfigUtils.registerAutoProxyCreatorIfNecessary(registry);
            AopConfigUtils.forceAutoProxyCreatorToUseClassProxying(registry);
        }
    }
}
