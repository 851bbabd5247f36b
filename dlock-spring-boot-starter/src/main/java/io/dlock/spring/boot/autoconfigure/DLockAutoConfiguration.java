package io.dlock.spring.boot.autoconfigure;

import io.dlock.LockClient;
import io.dlock.LockMetricNames;
import io.dlock.LockOptions;
import io.dlock.spring.boot.annotation.ActiveLocks;
import io.dlock.spring.boot.annotation.DistributedLockAdvisor;
import io.dlock.spring.boot.annotation.DistributedLockInterceptor;
import io.dlock.spring.boot.annotation.LeaderOnlyAdvisor;
import io.dlock.spring.boot.annotation.LeaderOnlyInterceptor;
import io.dlock.spring.boot.annotation.ScheduledRunRecorder;
import io.dlock.spring.boot.internal.LazyLockClient;
import io.dlock.spring.boot.leader.LeaderElections;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import java.util.Objects;
import org.springframework.aop.config.AopConfigUtils;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.SmartInitializingSingleton;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.BeanExpressionContext;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.beans.factory.support.BeanDefinitionRegistry;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.Import;
import org.springframework.context.annotation.ImportBeanDefinitionRegistrar;
import org.springframework.context.annotation.Role;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotationMetadata;
import org.springframework.util.StringValueResolver;

/**
 * Auto-configures a {@link LockClient} from {@code dlock.uri} and the other {@code dlock.*}
 * properties ({@link DLockProperties}), binds the application's Micrometer {@code MeterRegistry} and
 * {@code ObservationRegistry} to it, applies {@code @DistributedLock}/{@code @ScheduledLock} to
 * bean methods, and runs the leader elections of {@code @LeaderOnly} methods ({@link
 * LeaderElections}).
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
     * The lock client for {@code dlock.uri}. With {@code dlock.connect=lazy} (the default) it
     * connects in the background, so that the application starts while the backend is down (lock
     * calls fail with {@link io.dlock.LockBackendException} until it is reachable); with {@code
     * eager} it connects here.
     *
     * <p>Blocking: lazy, never (the URI and options are checked without a network call); eager, up
     * to {@code dlock.connect-timeout}. Thread-safety: the client is thread-safe. On failure: a
     * malformed URI, an unknown scheme, a missing backend module or a bad option is an {@link
     * IllegalArgumentException} that fails the startup in both modes; an unreachable backend is a
     * {@link io.dlock.LockBackendException} that fails it only when eager.
     *
     * @param properties the {@code dlock.*} properties
     * @param customizers option customizers, applied in order after the properties
     * @return the client, closed when the context closes (which also stops background attempts)
     */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean(LockClient.class)
    @ConditionalOnProperty(prefix = "dlock", name = "uri")
    public LockClient dlockClient(DLockProperties properties, ObjectProvider<LockOptionsCustomizer> customizers) {
        LockOptions.Builder options = properties.toOptions();
        customizers.orderedStream().forEach(c -> c.customize(options));
        // @ConditionalOnProperty: dlock.uri is set
        String uri = Objects.requireNonNull(properties.getUri(), "dlock.uri");
        if (properties.getConnect() == DLockProperties.Connect.EAGER) {
            return LockClient.connect(uri, options.build());
        }
        return LazyLockClient.start(
                uri,
                options.build(),
                properties.getRetry().getBaseSleep(),
                properties.getRetry().getMaxSleep());
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
     * @param environment resolves placeholders in annotation attributes; gives {@code dlock.scheduled.*}
     * @param recorders where scheduled runs' outcomes go, if anywhere
     * @return the interceptor, closed with the context
     */
    @Bean(destroyMethod = "close")
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    public static DistributedLockInterceptor dlockInterceptor(
            ObjectProvider<LockClient> client,
            ActiveLocks active,
            BeanFactory beanFactory,
            Environment environment,
            ObjectProvider<ScheduledRunRecorder> recorders) {
        // Bound here, not injected: a post-processor's dependencies are created too early for binding.
        DLockProperties.Scheduled scheduled = Binder.get(environment)
                .bind("dlock.scheduled", DLockProperties.Scheduled.class)
                .orElseGet(DLockProperties.Scheduled::new);
        DistributedLockInterceptor.Settings settings = new DistributedLockInterceptor.Settings(
                values(environment, beanFactory),
                scheduled.getDefaultLockAtMostFor(),
                scheduled.getDefaultLockAtLeastFor(),
                () -> recorders.getIfAvailable(() -> ScheduledRunRecorder.NONE));
        return new DistributedLockInterceptor(client::getIfUnique, active, beanFactory, settings);
    }

    /**
     * Resolves annotation attributes as ShedLock does: {@code ${...}} placeholders against the
     * Environment (strictly: an unresolvable one without a default throws), then {@code #{...}}
     * through the bean factory's expression resolver.
     */
    static StringValueResolver values(Environment environment, BeanFactory beanFactory) {
        return text -> {
            String resolved = environment.resolveRequiredPlaceholders(text);
            if (resolved.contains("#{")
                    && beanFactory instanceof ConfigurableBeanFactory cbf
                    && cbf.getBeanExpressionResolver() != null) {
                Object value = Objects.requireNonNull(cbf.getBeanExpressionResolver())
                        .evaluate(resolved, new BeanExpressionContext(cbf, null));
                return value == null ? null : value.toString();
            }
            return resolved;
        };
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

    /**
     * The application's leader elections, joined when the context has started and left when it
     * stops: those of {@code @LeaderOnly} methods and of {@link LeaderElections#election}.
     *
     * @param client the application's lock client, looked up when an election is made
     * @param publisher where the elected and revoked events go
     * @return the elections
     */
    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    @ConditionalOnMissingBean
    public static LeaderElections dlockLeaderElections(
            ObjectProvider<LockClient> client, ApplicationEventPublisher publisher) {
        return new LeaderElections(
                () -> {
                    LockClient c = client.getIfUnique();
                    if (c == null) {
                        throw new IllegalStateException(
                                "a leader election needs a LockClient: set dlock.uri or define one LockClient bean");
                    }
                    return c;
                },
                publisher);
    }

    /**
     * The aspect of {@code @LeaderOnly}.
     *
     * @param elections where the elections run
     * @param beanFactory resolves {@code @bean} references in SpEL names
     * @param environment resolves placeholders in names
     * @return the interceptor
     */
    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    public static LeaderOnlyInterceptor dlockLeaderOnlyInterceptor(
            LeaderElections elections, BeanFactory beanFactory, Environment environment) {
        return new LeaderOnlyInterceptor(elections, values(environment, beanFactory));
    }

    /**
     * The advisor that proxies beans with {@code @LeaderOnly} methods.
     *
     * @param interceptor the aspect
     * @return the advisor
     */
    @Bean
    @Role(BeanDefinition.ROLE_INFRASTRUCTURE)
    public static LeaderOnlyAdvisor dlockLeaderOnlyAdvisor(LeaderOnlyInterceptor interceptor) {
        return new LeaderOnlyAdvisor(interceptor);
    }

    /**
     * Fails the startup when a {@code @LeaderOnly} method has no lock client to elect with.
     *
     * @param elections the elections
     * @param client the application's lock client, if any
     * @return the check
     */
    @Bean
    public static SmartInitializingSingleton dlockLeaderOnlyCheck(
            LeaderElections elections, ObjectProvider<LockClient> client) {
        return () -> {
            if (!elections.terms().isEmpty() && client.getIfUnique() == null) {
                throw new IllegalStateException("@LeaderOnly needs a LockClient for elections "
                        + elections.terms().keySet() + ": set dlock.uri or define one LockClient bean");
            }
        };
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

        /** The {@code dlock.scheduled.runs} counter. */
        @Bean
        @ConditionalOnMissingBean(ScheduledRunRecorder.class)
        ScheduledRunRecorder dlockScheduledRunMeter(ObjectProvider<MeterRegistry> registry) {
            return (backend, lockName, outcome) -> {
                MeterRegistry r = registry.getIfUnique();
                if (r != null) {
                    Counter.builder(ScheduledRunRecorder.METER)
                            .tag(LockMetricNames.TAG_BACKEND, backend)
                            .tag(LockMetricNames.TAG_LOCK, lockName)
                            .tag(LockMetricNames.TAG_OUTCOME, outcome.tag())
                            .description("@ScheduledLock runs: ran, skipped (another node holds the lock) or error")
                            .register(r)
                            .increment();
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
