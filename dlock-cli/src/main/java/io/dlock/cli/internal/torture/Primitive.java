package io.dlock.cli.internal.torture;

import io.dlock.Capability;
import java.util.Locale;

/**
 * What the torture's workers take: {@code dlock torture --primitive}.
 *
 * <p>Thread-safety: immutable.
 */
public enum Primitive {
    /** One exclusive lock; workers read-modify-write one fenced store. */
    EXCLUSIVE("exclusive", Capability.EXCLUSIVE),
    /**
     * A read-write lock: each grant is a read or a write (a configurable mix); the store checks that
     * readers overlap only readers, and writers read-modify-write a fenced value.
     */
    READ_WRITE("read-write", Capability.READ_WRITE),
    /** A semaphore: the store checks that never more than the permits are inside. */
    SEMAPHORE("semaphore", Capability.SEMAPHORE),
    /** A multi-lock over several names: every part's store sees fenced writes with that part's token. */
    MULTI("multi", Capability.MULTI_LOCK),
    /**
     * A leader election: each worker is one candidate; while it holds a valid term it
     * read-modify-writes the fenced store with the term number, and it keeps candidating after a
     * term ends. The store's sections are terms (a worker and its term number).
     */
    ELECTION("election", Capability.EXCLUSIVE);

    private final String cliName;
    private final Capability capability;

    Primitive(String cliName, Capability capability) {
        this.cliName = cliName;
        this.capability = capability;
    }

    /**
     * Returns the name used on the command line and in the output.
     *
     * @return the name, like {@code read-write}
     */
    public String cliName() {
        return cliName;
    }

    /**
     * Returns the capability a backend needs for this primitive.
     *
     * @return the capability
     */
    public Capability capability() {
        return capability;
    }

    /**
     * Parses a command-line name.
     *
     * <p>On failure: {@link IllegalArgumentException} naming the accepted values.
     *
     * @param text {@code exclusive}, {@code read-write}, {@code semaphore}, {@code multi} or {@code
     *     election}
     * @return the primitive
     * @throws IllegalArgumentException for any other text
     */
    public static Primitive parse(String text) {
        String t = text.trim().toLowerCase(Locale.ROOT);
        for (Primitive p : values()) {
            if (p.cliName.equals(t)) {
                return p;
            }
        }
        throw new IllegalArgumentException(
                "must be exclusive, read-write, semaphore, multi or election, was '" + text + "'");
    }
}
