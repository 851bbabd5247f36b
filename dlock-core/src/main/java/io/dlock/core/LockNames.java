package io.dlock.core;

/**
 * Lock-name rules, the same on every backend so that a name valid on one is valid on all: 1 to
 * {@value #MAX_LENGTH} characters from {@code A-Z a-z 0-9 _ - . :}, and neither {@code .} nor
 * {@code ..} (which would name the parent or the namespace itself on path-based backends). No
 * slash, so a name can never leave the client's namespace.
 *
 * <p>Public for wrappers of {@link io.dlock.LockClient} (the Spring starter's lazily connecting
 * client) that must refuse a bad name before a real client exists.
 */
public final class LockNames {
    /** The longest lock name, in characters. */
    public static final int MAX_LENGTH = 200;

    /**
     * The start of the lock names that belong to leader elections: election {@code x} is the
     * exclusive lock {@code election:x}, so tools can tell elections from locks.
     */
    public static final String ELECTION_PREFIX = "election:";

    private LockNames() {}

    /**
     * Checks a lock name against the rules above.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws; nothing else.
     *
     * @param name the name to check
     * @return {@code name}, for chaining
     * @throws IllegalArgumentException naming the rule it breaks (null, empty, too long, {@code .}
     *     or {@code ..}, a character outside the allowed set and its index)
     */
    public static String validate(String name) {
        if (name == null) {
            throw new IllegalArgumentException("lock name must not be null");
        }
        if (name.isEmpty()) {
            throw new IllegalArgumentException("lock name must not be empty");
        }
        if (name.length() > MAX_LENGTH) {
            throw new IllegalArgumentException(
                    "lock name is " + name.length() + " characters long; at most " + MAX_LENGTH + " are allowed");
        }
        if (name.equals(".") || name.equals("..")) {
            throw new IllegalArgumentException("lock name must not be '" + name + "'");
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z')
                    || (c >= 'A' && c <= 'Z')
                    || (c >= '0' && c <= '9')
                    || c == '_'
                    || c == '-'
                    || c == '.'
                    || c == ':';
            if (!ok) {
                throw new IllegalArgumentException("lock name '" + printable(name) + "' has character "
                        + (Character.isISOControl(c) ? String.format("U+%04X", (int) c) : "'" + c + "'")
                        + " at index " + i + "; allowed: A-Z a-z 0-9 _ - . :");
            }
        }
        return name;
    }

    private static String printable(String name) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            sb.append(Character.isISOControl(c) ? '?' : c);
        }
        return sb.toString();
    }
}
