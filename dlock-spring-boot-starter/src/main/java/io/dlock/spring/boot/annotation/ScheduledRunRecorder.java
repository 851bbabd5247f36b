package io.dlock.spring.boot.annotation;

import java.util.Locale;

/**
 * Hears the outcome of each {@link ScheduledLock @ScheduledLock} run. The auto-configuration
 * records them as the counter {@value #METER} (tags {@code backend}, {@code lock}, {@code outcome})
 * in the application's {@code MeterRegistry}.
 *
 * <p>Why a meter of the starter's own: the client's {@code dlock.acquire} timer cannot tell a
 * scheduled run skipped because another node holds the lock (a normal outcome) from a waiter that
 * gave up; it records both as {@code outcome=timeout}, and its observation marks them as errors.
 *
 * <p>Thread-safety: implementations must be safe from any thread; they are called on the job's
 * thread.
 */
@FunctionalInterface
public interface ScheduledRunRecorder {
    /** The counter's name. */
    String METER = "dlock.scheduled.runs";

    /** Records nothing. */
    ScheduledRunRecorder NONE = (backend, lockName, outcome) -> {};

    /** What became of a scheduled run. */
    enum Outcome {
        /** The lock was acquired and the job ran (whatever the job itself then did). */
        RAN,
        /** Another node holds the lock: this node skipped the run. Not an error. */
        SKIPPED,
        /** The lock could not be asked for (backend unreachable or refusing); the job did not run. */
        ERROR;

        /**
         * The {@code outcome} tag's value.
         *
         * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
         *
         * @return {@code ran}, {@code skipped} or {@code error}
         */
        public String tag() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * Records one run's outcome.
     *
     * <p>Blocking: must not block. Thread-safety: called from any job's thread. On failure: an
     * exception propagates to the job's caller (the scheduler); implementations should not throw.
     *
     * @param backend the backend's name, for example {@code redis}
     * @param lockName the job's lock name
     * @param outcome what became of the run
     */
    void record(String backend, String lockName, Outcome outcome);
}
