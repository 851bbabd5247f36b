package io.dlock.cli.internal;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

/**
 * Converts command-line durations written as dlock's URIs write them ({@code 3s}, {@code 1500ms},
 * {@code 2m}, {@code 1h}) or in ISO-8601 ({@code PT3S}), and formats durations back.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class DurationConverter implements CommandLine.ITypeConverter<Duration> {

    private static final Pattern SIMPLE = Pattern.compile("(\\d{1,9})\\s*(ms|s|m|h)");

    /**
     * Parses {@code text}.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws {@link
     * CommandLine.TypeConversionException} (picocli reports it with the option's name).
     *
     * @param text for example {@code 3s}, {@code 1500ms}, {@code 2m}, {@code 1h} or {@code PT3S}
     * @return the duration
     * @throws CommandLine.TypeConversionException if the text is not a duration
     */
    @Override
    public Duration convert(String text) {
        return parse(text);
    }

    /**
     * Parses {@code text} as {@link #convert(String)} does.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws, nothing else.
     *
     * @param text the duration's text
     * @return the duration
     * @throws CommandLine.TypeConversionException if the text is not a duration
     */
    public static Duration parse(String text) {
        String trimmed = text == null ? "" : text.trim().toLowerCase(Locale.ROOT);
        Matcher matcher = SIMPLE.matcher(trimmed);
        if (matcher.matches()) {
            long amount = Long.parseLong(matcher.group(1));
            switch (matcher.group(2)) {
                case "ms":
                    return Duration.ofMillis(amount);
                case "s":
                    return Duration.ofSeconds(amount);
                case "m":
                    return Duration.ofMinutes(amount);
                default:
                    return Duration.ofHours(amount);
            }
        }
        if (trimmed.startsWith("pt")) {
            try {
                return Duration.parse(trimmed);
            } catch (DateTimeParseException e) {
                // fall through to the error below
            }
        }
        throw new CommandLine.TypeConversionException(
                "'" + text + "' is not a duration; write it like 3s, 1500ms or 2m");
    }

    /**
     * Formats a duration the way dlock's URI parameters take it: whole seconds as {@code 3s},
     * anything else in milliseconds ({@code 1500ms}).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail for durations
     * of up to about 292 million years.
     *
     * @param duration a non-negative duration
     * @return its text
     */
    public static String toParameter(Duration duration) {
        long millis = duration.toMillis();
        return millis % 1000 == 0 ? (millis / 1000) + "s" : millis + "ms";
    }

    /**
     * Formats a measured duration for people, with one decimal of seconds ({@code 3.1 s}).
     *
     * @param duration the duration
     * @return its text
     */
    public static String toSeconds(Duration duration) {
        return String.format(Locale.ROOT, "%.1f s", duration.toMillis() / 1000.0);
    }
}
