package io.dlock.spring.boot.autoconfigure;

import io.dlock.LockClient;
import io.dlock.spring.boot.annotation.DistributedLockInterceptor;
import io.dlock.spring.boot.internal.LazyLockClient;
import io.dlock.spring.boot.internal.UriRedaction;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.BeanFactory;

/**
 * What both Spring Boot lines' health indicators show of the client: its backend's name and, for
 * the client this starter made from {@code dlock.uri}, that URI without its secrets.
 *
 * @param backend the backend's name
 * @param redactedUri the redacted URI, or null for a client the application defined itself
 */
record HealthDetails(String backend, @Nullable String redactedUri) {

    static HealthDetails of(LockClient client, DLockProperties properties, BeanFactory beanFactory) {
        if (client instanceof LazyLockClient lazy) {
            return new HealthDetails(lazy.backend(), lazy.redactedUri());
        }
        String uri = null;
        String configured = properties.getUri();
        if (configured != null
                && beanFactory.containsBean("dlockClient")
                && beanFactory.getBean("dlockClient") == client) {
            uri = UriRedaction.redact(configured);
        }
        return new HealthDetails(DistributedLockInterceptor.backendNameOf(client), uri);
    }
}
