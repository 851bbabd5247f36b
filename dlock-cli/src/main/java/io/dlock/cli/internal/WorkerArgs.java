package io.dlock.cli.internal;

import java.util.HashMap;
import java.util.Map;

/** The {@code --name value} argument pairs the demo and torture worker JVMs are started with. */
public final class WorkerArgs {
    private WorkerArgs() {}

    /**
     * Reads {@code --name value} pairs into a map keyed by name (without the dashes); a later pair
     * wins over an earlier one with the same name.
     *
     * <p>Blocking: never. Thread-safety: pure. On failure: {@link IllegalArgumentException} for an
     * odd number of arguments or a name that does not start with {@code --}.
     *
     * @param args the worker's command-line arguments
     * @return the values by name
     */
    public static Map<String, String> parse(String[] args) {
        if (args.length % 2 != 0) {
            throw new IllegalArgumentException("arguments must be --name value pairs");
        }
        Map<String, String> values = new HashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            if (!args[i].startsWith("--")) {
                throw new IllegalArgumentException("expected --name, got '" + args[i] + "'");
            }
            values.put(args[i].substring(2), args[i + 1]);
        }
        return values;
    }
}
