package io.dlock.cli.internal.torture;

import java.util.Arrays;
import java.util.EnumSet;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The faults {@code dlock torture} injects, by their command-line names.
 *
 * <p>Thread-safety: immutable.
 */
public enum FaultKind {
    /** SIGSTOP a worker JVM inside its critical section, then SIGCONT: a long GC pause. */
    PAUSE("pause"),
    /** SIGKILL a worker JVM inside its critical section and start a replacement. */
    KILL("kill"),
    /** SIGKILL the server and start it again on the same port and data. */
    SERVER_RESTART("server-restart"),
    /** Drop one worker's traffic silently (both ways or one way) for a while, then heal. */
    PARTITION("partition");

    private final String cliName;

    FaultKind(String cliName) {
        this.cliName = cliName;
    }

    /**
     * Returns the name used on the command line and in the output.
     *
     * @return for example {@code server-restart}
     */
    public String cliName() {
        return cliName;
    }

    /**
     * Parses a comma-separated list such as {@code pause,kill}; {@code all} means every kind and
     * {@code none} (or an empty list) no faults.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalArgumentException} naming the unknown kind and the known ones.
     *
     * @param list the names
     * @return the kinds, possibly empty
     * @throws IllegalArgumentException for an unknown name
     */
    public static Set<FaultKind> parseList(String list) {
        EnumSet<FaultKind> kinds = EnumSet.noneOf(FaultKind.class);
        for (String raw : list.split(",")) {
            String name = raw.trim().toLowerCase(Locale.ROOT);
            if (name.isEmpty() || name.equals("none")) {
                continue;
            }
            if (name.equals("all")) {
                kinds.addAll(EnumSet.allOf(FaultKind.class));
                continue;
            }
            FaultKind kind = Arrays.stream(values())
                    .filter(k -> k.cliName.equals(name))
                    .findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("unknown fault '" + raw.trim() + "'; known: "
                            + Arrays.stream(values()).map(FaultKind::cliName).collect(Collectors.joining(","))
                            + ", all, none"));
            kinds.add(kind);
        }
        return kinds;
    }
}
