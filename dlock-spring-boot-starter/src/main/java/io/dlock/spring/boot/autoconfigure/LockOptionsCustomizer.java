package io.dlock.spring.boot.autoconfigure;

import io.dlock.LockOptions;

/**
 * A bean that adjusts the auto-configured client's options after the {@code dlock.*} properties are
 * applied (for options that have no property, such as a custom {@link io.dlock.Ticker}). Customizers
 * run in {@link org.springframework.core.Ordered} order.
 *
 * <p>Thread-safety: called once, on the thread creating the client.
 */
@FunctionalInterface
public interface LockOptionsCustomizer {
    /**
     * Adjusts the options.
     *
     * <p>Blocking: should not block. Thread-safety: called on the thread creating the client. On
     * failure: an exception fails the client's creation and so the application's startup.
     *
     * @param options the builder, already holding the properties' values
     */
    void customize(LockOptions.Builder options);
}
