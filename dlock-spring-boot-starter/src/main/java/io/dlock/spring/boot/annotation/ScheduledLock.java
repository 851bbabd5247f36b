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
 * {@code void} or an object type (a skipped run returns {@code null}). Malformed durations, an
 * unresolvable placeholder, a blank or invalid name, or {@code lockAtLeastFor > lockAtMostFor} fail
 * the application context at startup, naming the method.
 *
 * <p>Outcomes: a run skipped because another node holds the lock is not an error (meter {@code
 * dlock.scheduled.runs} with {@code outcome=skipped}, DEBUG log). A run that cannot reach the backend
 * ({@link io.dlock.LockBackendException}, also while a lazily connecting client is not connected
 * yet) counts {@code outcome=error}, logs one WARN naming the job, the lock and the cause, and is
 * rethrown to the scheduler, whose {@code ErrorHandler} decides what else happens (Spring's default
 * for repeating tasks logs it and keeps the schedule).
 *
 * <p>Thread-safety: an annotation; the aspect behind it is safe from any thread.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface ScheduledLock {
    /**
     * The lock name: every node running the job must use the same one. Not SpEL over arguments; a
     * {@code ${...}} placeholder or a {@code #{...}} expression is resolved once, at startup.
     *
     * @return the lock name
     */
    String name();

    /**
     * The longest the lock is held, as {@code 10m}, {@code 30s} or ISO-8601, or a placeholder or
     * expression giving one ({@code "${jobs.report.max:10m}"}), resolved at startup. Empty (the
     * default): {@code dlock.scheduled.default-lock-at-most-for}, and without that property the
     * startup fails naming the method.
     *
     * @return the hold bound, or empty for the configured default
     */
    String lockAtMostFor() default "";

    /**
     * The shortest the lock is held, counted from the job's start, written as {@link
     * #lockAtMostFor()}. Empty (the default): {@code dlock.scheduled.default-lock-at-least-for}, and
     * without that property {@code 0s}, which releases the lock as soon as the job returns.
     *
     * @return the minimum hold, or empty for the configured default
     */
    String lockAtLeastFor() default "";
}
