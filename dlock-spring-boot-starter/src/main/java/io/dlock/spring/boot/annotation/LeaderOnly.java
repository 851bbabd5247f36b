package io.dlock.spring.boot.annotation;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the method only on the instance that currently leads the election {@link #value()}; on every
 * other instance the call is skipped (not an error): typically on a {@code @Scheduled} method that
 * one node of the fleet should run.
 *
 * <pre>{@code
 * @Scheduled(fixedRate = 60_000)
 * @LeaderOnly("reports")
 * public void report() {
 *     long term = LeaderElections.currentTerm().fencingToken(); // pass it to what you write
 *     ...
 * }
 * }</pre>
 *
 * <p>Each election named by an annotation joins when the application context starts and leaves
 * when it stops ({@link io.dlock.spring.boot.leader.LeaderElections}), so the instance is a
 * candidate from startup, not from the first call. Inside the method, {@link
 * io.dlock.spring.boot.leader.LeaderElections#currentTerm()} is this instance's term: its fencing
 * token is the term number, which the resources the leader writes to should check.
 *
 * <p>A skipped call returns nothing: {@code void} methods simply do not run; {@code Optional}
 * returns {@code Optional.empty()}, {@code CompletableFuture}/{@code CompletionStage} a future
 * completed with null, any other reference type null. A method returning a primitive cannot be
 * skipped and fails the startup.
 *
 * <p>Thread-safety: an annotation; the aspect is thread-safe.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface LeaderOnly {

    /**
     * The election's name, with the name rules of a lock (at most 191 characters); {@code ${...}}
     * placeholders and {@code #{...}} expressions are resolved at startup.
     *
     * @return the election's name
     */
    String value();
}
