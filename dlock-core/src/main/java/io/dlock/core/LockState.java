package io.dlock.core;

import java.util.EnumMap;
import java.util.EnumSet;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/** The life of one acquisition, from its request to its end. Moved only by {@link Acquisition}. */
enum LockState {
    /** Created; nothing sent to the backend yet. */
    IDLE,
    /** Standing in the backend's queue (or about to), waiting for its turn. */
    QUEUED,
    /** Granted: the lease is valid while the backend guarantees it. */
    HELD,
    /** Closed by its owner; the backend entry is being removed. */
    RELEASING,
    /** Released; terminal. */
    RELEASED,
    /** The backend stopped guaranteeing the grant; terminal (the entry is still cleaned up). */
    LOST,
    /** Withdrawn before it was granted: timeout, interrupt, cancel, failure or client close; terminal. */
    CANCELLED;

    private static final Map<LockState, Set<LockState>> LEGAL = new EnumMap<>(LockState.class);

    static {
        LEGAL.put(IDLE, EnumSet.of(QUEUED, CANCELLED));
        LEGAL.put(QUEUED, EnumSet.of(HELD, CANCELLED));
        LEGAL.put(HELD, EnumSet.of(RELEASING, LOST));
        LEGAL.put(RELEASING, EnumSet.of(RELEASED));
        LEGAL.put(RELEASED, EnumSet.noneOf(LockState.class));
        LEGAL.put(LOST, EnumSet.noneOf(LockState.class));
        LEGAL.put(CANCELLED, EnumSet.noneOf(LockState.class));
    }

    /** Whether {@code this -> next} is an edge of the state machine. */
    boolean canMoveTo(LockState next) {
        return Objects.requireNonNull(LEGAL.get(this)).contains(next);
    }
}
