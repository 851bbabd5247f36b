package io.dlock.spring.boot.internal;

/**
 * The lock-name rules of {@link io.dlock.LockClient#lock(String)}, checked while the lazy client has
 * no real client to ask: 1 to 200 characters from {@code A-Z a-z 0-9 _ - . :}, neither {@code .}
 * nor {@code ..}. Core's checker is package-private; the rules are part of the API's contract.
 */
final class LockNameRules {
    static final int MAX_LENGTH = 200;

    private LockNameRules() {}

    static String validate(String name) {
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
                throw new IllegalArgumentException("lock name '" + name.replaceAll("\\p{Cntrl}", "?")
                        + "' has character "
                        + (Character.isISOControl(c) ? String.format("U+%04X", (int) c) : "'" + c + "'")
                        + " at index " + i + "; allowed: A-Z a-z 0-9 _ - . :");
            }
        }
        return name;
    }
}
