package io.dlock.spring.boot;

import io.dlock.spring.boot.actuate.DLockHealthIndicator;
import io.dlock.spring.boot.internal.HealthCheck;
import java.util.function.Supplier;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.observation.ObservationAutoConfiguration;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.autoconfigure.AutoConfigurations;

/**
 * What the shared starter tests need that Spring Boot 3.5 and 4 name differently: Spring Boot 3.5
 * here (the starter's own test run). dlock-spring-boot4-it has the Boot 4 twin of this class.
 */
final class BootLine {
    /** This line's health indicator type, the one the starter registers here. */
    static final Class<?> HEALTH_INDICATOR = DLockHealthIndicator.class;

    /** Spring Boot's Micrometer metrics and observation auto-configurations with a simple registry. */
    static final AutoConfigurations METRICS = AutoConfigurations.of(
            ObservationAutoConfiguration.class,
            MetricsAutoConfiguration.class,
            SimpleMetricsExportAutoConfiguration.class,
            CompositeMeterRegistryAutoConfiguration.class);

    private BootLine() {}

    /** The {@code dlockHealthIndicator} bean's {@code health()}, called anew on each {@code get()}. */
    static Supplier<HealthCheck.Report> health(BeanFactory ctx) {
        DLockHealthIndicator indicator = ctx.getBean("dlockHealthIndicator", DLockHealthIndicator.class);
        return () -> report(indicator.health());
    }

    /** One call of the {@code dlockHealthIndicator} bean. */
    static HealthCheck.Report healthNow(BeanFactory ctx) {
        return health(ctx).get();
    }

    /** {@code Health.toString()} of one call, to check what a log of it would show. */
    static String healthText(BeanFactory ctx) {
        return ctx.getBean("dlockHealthIndicator", DLockHealthIndicator.class).health().toString();
    }

    private static HealthCheck.Report report(Health h) {
        return new HealthCheck.Report(h.getStatus().getCode(), h.getDetails());
    }
}
