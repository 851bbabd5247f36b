package io.dlock.spring.boot.annotation;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs a scheduled job on at most one node at a time, with ShedLock's semantics, on any dlock
 * backend.
 *
 * <pre>{@code
 * @Scheduled(cron = "0 * * * * *")
 * @ScheduledLock(name = "nightly-report", lockAtMostFor = "10m", lockAtLeastFor = "30s")
 * public void report() { ... }
 * }</pre>
 *
 * <ul>
 *   <li>No waiting: one attempt ({@code acquireAsync(Duration.ZERO)}); a node that does not get the
 *       lock skips this run and returns {@code null}.
 *   <li>{@link #lockAtLeastFor()}: a job that finishes early keeps the lock until that long after
 *       it started, so a node whose scheduler fires a little later does not run it again. The
 *       release is deferred on the starter's scheduler thread; the job's thread returns at once.
 *   <li>{@link #lockAtMostFor()}: the lock is released that long after the job started even if the
 *       job still runs (the lease then reports {@code isValid() == false}).
 * </ul>
 *
 * <p>The lease is {@link DistributedLocks#currentLease()} inside the job. The method should return
 * {@code void} or an object type (a skipped run returns {@code null}). Malformed durations, a blank
 * or invalid name, or {@code lockAtLeastFor > lockAtMostFor} fail the application context at startup.
 *
 * <p>Thread-safety: an annotation; the aspect behind it is safe from any thread.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface ScheduledLock {
    /**
     * The lock name, literal (not SpEL): every node running the job must use the same one.
     *
     * @return the lock name
     */
    String name();

    /**
     * The longest the lock is held, as {@code 10m}, {@code 30s} or ISO-8601.
     *
     * @return the hold bound
     */
    String lockAtMostFor();

    /**
     * The shortest the lock is held, counted from the job's start; {@code 0s} (the default) releases
     * it as soon as the job returns.
     *
     * @return the minimum hold
     */
    String lockAtLeastFor() default "0s";
}
