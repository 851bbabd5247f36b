package io.dlock.cli.internal.torture;

import io.dlock.testkit.FencedStore;

/**
 * What a {@link TortureRun} tells its observer (progress display, report writer) as it goes. Every
 * method is called on the run's thread and must return promptly; the defaults do nothing.
 *
 * <p>Thread-safety: implementations that hand what they receive to other threads (a progress
 * ticker) publish it themselves.
 */
public interface TortureListener {

    /** Does nothing. */
    TortureListener NONE = new TortureListener() {};

    /**
     * The run entered a phase: {@code starting}, {@code faults}, {@code checking}.
     *
     * @param phase the phase's name
     */
    default void phase(String phase) {}

    /**
     * The fenced store exists: its {@link FencedStore#accessCount()} counts the operations so far.
     *
     * @param store the run's store
     */
    default void store(FencedStore store) {}

    /**
     * A fault was injected (its recovery may still be pending).
     *
     * @param kind what was injected
     */
    default void faultInjected(FaultKind kind) {}

    /**
     * The run is over and checked; its servers and workers are about to be stopped.
     *
     * @param recording what happened
     */
    default void finished(TortureRecording recording) {}
}
