package io.dlock.cli.internal.report;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Escaping and the page skeleton of a report. Every string that did not come from this package's
 * own constants goes through {@link #escape} before it is put into the page: worker names, lock
 * server URIs and exception messages are user-controlled.
 *
 * <p>Thread-safety: stateless.
 */
public final class Html {

    private static final String STYLE = "body{font-family:sans-serif;margin:1.5em;color:#222}"
            + "h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}"
            + "pre{background:#f6f6f6;padding:.8em;overflow-x:auto;font-size:12px}"
            + "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
            + "th{background:#eee}td:first-child,th:first-child{text-align:left}"
            + ".pass{color:#2e7d32;font-weight:bold}.fail{color:#c62828;font-weight:bold}"
            + ".legend span{display:inline-block;margin-right:1.2em}.swatch{display:inline-block;width:12px;"
            + "height:12px;margin-right:4px;vertical-align:middle}svg text{font-size:11px;font-family:sans-serif}";

    private Html() {}

    /**
     * Escapes text for an HTML or SVG element body or a quoted attribute value: markup characters
     * become entities, and characters XML 1.0 does not allow at all (control characters, unpaired
     * surrogates) become U+FFFD, so that no string from a run can end an element or make the
     * document unreadable.
     *
     * <p>Blocking: never. Thread-safety: stateless. On failure: cannot fail.
     *
     * @param text any text
     * @return the text with {@code & < > " '} replaced by entities and XML-invalid characters by U+FFFD
     */
    public static String escape(String text) {
        StringBuilder out = new StringBuilder(text.length() + 16);
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '&' -> out.append("&amp;");
                case '<' -> out.append("&lt;");
                case '>' -> out.append("&gt;");
                case '"' -> out.append("&quot;");
                case '\'' -> out.append("&#39;");
                default -> {
                    if (Character.isHighSurrogate(c)
                            && i + 1 < text.length()
                            && Character.isLowSurrogate(text.charAt(i + 1))) {
                        out.append(c).append(text.charAt(++i));
                    } else if (allowedInXml(c)) {
                        out.append(c);
                    } else {
                        out.append('\uFFFD');
                    }
                }
            }
        }
        return out.toString();
    }

    private static boolean allowedInXml(char c) {
        return c == '\t' || c == '\n' || c == '\r' || (c >= 0x20 && c < 0xD800) || (c >= 0xE000 && c <= 0xFFFD);
    }

    /**
     * A whole page: a title (escaped here) and a body (already HTML).
     *
     * @param title the page's title, plain text
     * @param body the page's body, HTML
     * @return the page
     */
    public static String page(String title, String body) {
        return "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + escape(title)
                + "</title><style>" + STYLE + "</style></head><body>\n<h1>" + escape(title) + "</h1>\n" + body
                + "\n</body></html>\n";
    }

    /**
     * Writes a page to {@code file} in UTF-8, creating its directory.
     *
     * @param file where to write
     * @param page the page
     * @return the file's absolute path
     * @throws UncheckedIOException if it cannot be written
     */
    public static Path write(Path file, String page) {
        Path target = file.toAbsolutePath();
        try {
            Path dir = target.getParent();
            if (dir != null) {
                Files.createDirectories(dir);
            }
            Files.writeString(target, page, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the report to " + target + ": " + e.getMessage(), e);
        }
        return target;
    }
}
