package io.dlock.spring.boot.annotation;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the annotated bean method under the exclusive distributed lock named by {@link #key()}.
 *
 * <pre>{@code
 * @DistributedLock(key = "'order:' + #orderId", waitTime = "5s")
 * public void place(long orderId, int quantity) {
 *     long token = DistributedLocks.currentLease().fencingToken();
 *     store.write(orderId, quantity, token);   // the store refuses tokens older than the last one
 * }
 * }</pre>
 *
 * <p>The method runs only while the lock is held; the lock is released when it returns or throws.
 * Methods returning {@link java.util.concurrent.CompletableFuture} or
 * {@link java.util.concurrent.CompletionStage} hold the lock until the returned stage completes. A
 * call through the proxy from a method that already holds the same lock on the same thread is
 * reentrant: it shares the outer lease and does not release it. Inside the method the lease is
 * {@link DistributedLocks#currentLease()}, or a parameter of type {@link io.dlock.Lease}, which the
 * aspect fills in (callers pass {@code null}).
 *
 * <p>Errors that can be known at startup fail the application context: a blank or unparsable
 * {@code key}, a malformed duration, {@link OnTimeout#SKIP} on a method returning a primitive. A
 * key that evaluates to {@code null}, an empty string or an invalid lock name fails the call with
 * {@link IllegalArgumentException} before anything is acquired.
 *
 * <p>Thread-safety: an annotation; the aspect behind it is safe from any thread, platform or virtual.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface DistributedLock {
    /**
     * The lock name, a SpEL expression over the method's arguments: by name ({@code #orderId}, when
     * compiled with {@code -parameters}) or by position ({@code #p0}, {@code #a0}); a literal name
     * is written in quotes ({@code "'nightly-report'"}). Bean references ({@code @beanName}) resolve.
     *
     * @return the SpEL expression; must not be blank
     */
    String key();

    /**
     * How long to wait for the lock, as {@code 500ms}, {@code 5s}, {@code 2m} or ISO-8601
     * ({@code PT5S}); {@code 0s} makes one attempt without waiting. Empty (the default) waits as long
     * as it takes.
     *
     * @return the wait, or empty for no limit
     */
    String waitTime() default "";

    /**
     * The longest this call holds the lock: when it has run that long the lock is released even if
     * the method is still running (its lease then reports {@code isValid() == false}, and a fenced
     * store refuses its writes). Empty (the default): held until the method returns. Crash release
     * is governed by the client's {@code dlock.lease-time} / {@code dlock.session-timeout}, not by this.
     *
     * @return the hold bound, or empty for none
     */
    String leaseTime() default "";

    /**
     * What happens when the lock is not acquired within {@link #waitTime()}.
     *
     * @return {@link OnTimeout#THROW} (the default) or {@link OnTimeout#SKIP}
     */
    OnTimeout onTimeout() default OnTimeout.THROW;
}
