package io.dlock.benchmarks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.jspecify.annotations.Nullable;

/**
 * A run saved by {@code dlock bench --json FILE}, and read back by {@code --from-json FILE} to print
 * the table and write the report and charts again without running anything.
 *
 * <p>The file is JSON lines. The first is {@code {"run":{...header...}}}, with {@code
 * "failure":"..."} beside {@code "run"} when the run stopped early; each further line is one result
 * as {@link Report#json} prints it: workload, backend, implementation, role, the figure ({@code
 * opsPerSec}, or {@code requestsPerCycle} for COST), operations, seconds, p50 and p99, overlaps,
 * then the result's further figures (per-round figures among them) and the ratios derived from them.
 * Reading keeps everything but the derived ratios, which {@link Report} computes again from the
 * per-round figures. Figures were written to three decimals.
 *
 * @param header the run's header: date, machine, sizes, the command's arguments ({@code args})
 * @param results every result, in run order
 * @param failure why the run stopped early, or empty
 */
record RunFile(Map<String, Object> header, List<Result> results, String failure) {

    /** The keys {@link Report#json} derives from others; not kept as a result's further figures. */
    private static final Set<String> DERIVED =
            Set.of("ratios", "roundRatios", "clientCpuRatios", "clientCpuRoundRatios");

    private static final Set<String> FIXED = Set.of(
            "workload",
            "backend",
            "impl",
            "role",
            "opsPerSec",
            "requestsPerCycle",
            "ops",
            "seconds",
            "p50us",
            "p99us",
            "overlaps");

    /** The file's lines: the header line, then one per result. */
    List<String> lines() {
        Map<String, Object> first = new LinkedHashMap<>();
        first.put("run", header);
        if (!failure.isEmpty()) {
            first.put("failure", failure);
        }
        List<String> lines = new ArrayList<>();
        lines.add(Report.toJson(first));
        for (Result r : results) {
            lines.add(Report.json(r, results));
        }
        return lines;
    }

    /**
     * Writes {@link #lines} to {@code file}.
     *
     * @throws UncheckedIOException if it cannot be written
     */
    void write(Path file) {
        try {
            Files.write(file, lines(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
        }
    }

    /**
     * Reads a file {@link #write} wrote, whole, before anything is drawn from it.
     *
     * @throws IllegalArgumentException naming the file, the line and what is wrong with it, for a
     *     line that is not JSON, a first line without {@code "run"}, or a result that lacks a field
     *     or names an implementation this build does not know
     * @throws UncheckedIOException if it cannot be read
     */
    static RunFile read(Path file) {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + file + ": " + e, e);
        }
        Map<String, Object> header = null;
        String failure = "";
        List<Result> results = new ArrayList<>();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.isBlank()) {
                continue;
            }
            String where = file + ":" + (i + 1) + ": ";
            try {
                Map<String, Object> object = Json.object(line);
                if (header == null) {
                    if (!(object.get("run") instanceof Map<?, ?> run)) {
                        throw new IllegalArgumentException(
                                "the first line must be the run's header, {\"run\":{...}}, as --json writes it");
                    }
                    header = stringKeys(run);
                    if (object.get("failure") instanceof String f) {
                        failure = f;
                    }
                } else {
                    results.add(result(object));
                }
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(where + e.getMessage(), e);
            }
        }
        if (header == null) {
            throw new IllegalArgumentException(file + ": empty; expected the JSON lines of dlock bench --json");
        }
        return new RunFile(header, List.copyOf(results), failure);
    }

    /** A result from one of {@link Report#json}'s objects. */
    static Result result(Map<String, Object> m) {
        String workload = string(m, "workload");
        LockImpl impl = LockImpl.parse(string(m, "impl"));
        String backend = string(m, "backend");
        if (!backend.equals(impl.backend().label())) {
            throw new IllegalArgumentException(
                    "'" + impl.label() + "' runs on " + impl.backend().label() + ", not on '" + backend + "'");
        }
        if (m.containsKey("role") && !SvgBars.role(impl.role()).equals(m.get("role"))) {
            throw new IllegalArgumentException("'" + impl.label() + "' is " + SvgBars.role(impl.role())
                    + " in this build, not '" + m.get("role") + "'");
        }
        Map<String, Object> extra = new LinkedHashMap<>();
        m.forEach((k, v) -> {
            if (!FIXED.contains(k) && !DERIVED.contains(k)) {
                extra.put(k, v);
            }
        });
        return new Result(
                workload,
                impl,
                number(m, workload.equals("COST") ? "requestsPerCycle" : "opsPerSec"),
                (long) number(m, "ops"),
                number(m, "seconds"),
                number(m, "p50us"),
                number(m, "p99us"),
                (long) number(m, "overlaps"),
                extra);
    }

    private static String string(Map<String, Object> m, String key) {
        if (m.get(key) instanceof String s) {
            return s;
        }
        throw new IllegalArgumentException(
                "a result needs \"" + key + "\" as a string, has " + String.valueOf(m.get(key)));
    }

    /** A number, NaN for {@code null} (how {@link Report#toJson} writes NaN); the key must be there. */
    private static double number(Map<String, Object> m, String key) {
        if (!m.containsKey(key)) {
            throw new IllegalArgumentException("a result needs \"" + key + "\"");
        }
        Object v = m.get(key);
        if (v == null) {
            return Double.NaN;
        }
        if (v instanceof Number n) {
            return n.doubleValue();
        }
        throw new IllegalArgumentException("\"" + key + "\" must be a number, is " + Report.toJson(v));
    }

    private static Map<String, Object> stringKeys(Map<?, ?> map) {
        Map<String, Object> out = new LinkedHashMap<>();
        map.forEach((k, v) -> out.put(String.valueOf(k), v));
        return out;
    }

    /**
     * A small JSON reader for what {@link Report#toJson} writes (objects, arrays, strings, numbers,
     * booleans, null). Objects keep their order; whole numbers are {@code Long}, others {@code
     * Double}. Stateful: one per line.
     */
    static final class Json {
        private final String text;
        private int at;

        private Json(String text) {
            this.text = text;
        }

        /**
         * One line that must be a JSON object.
         *
         * @throws IllegalArgumentException saying what was expected at which column
         */
        static Map<String, Object> object(String line) {
            Json json = new Json(line);
            json.space();
            if (json.peek() != '{') {
                throw json.error("expected a JSON object");
            }
            @SuppressWarnings("unchecked")
            Map<String, Object> value = (Map<String, Object>) java.util.Objects.requireNonNull(json.value());
            json.space();
            if (json.at < json.text.length()) {
                throw json.error("unexpected text after the object");
            }
            return value;
        }

        private @Nullable Object value() {
            space();
            char c = peek();
            switch (c) {
                case '{' -> {
                    at++;
                    Map<String, Object> map = new LinkedHashMap<>();
                    space();
                    if (peek() == '}') {
                        at++;
                        return map;
                    }
                    while (true) {
                        space();
                        if (peek() != '"') {
                            throw error("expected a quoted key");
                        }
                        String key = string();
                        space();
                        expect(':');
                        map.put(key, value());
                        space();
                        if (peek() == ',') {
                            at++;
                        } else {
                            expect('}');
                            return map;
                        }
                    }
                }
                case '[' -> {
                    at++;
                    List<@Nullable Object> list = new ArrayList<>();
                    space();
                    if (peek() == ']') {
                        at++;
                        return list;
                    }
                    while (true) {
                        list.add(value());
                        space();
                        if (peek() == ',') {
                            at++;
                        } else {
                            expect(']');
                            return list;
                        }
                    }
                }
                case '"' -> {
                    return string();
                }
                default -> {
                    if (text.startsWith("true", at)) {
                        at += 4;
                        return Boolean.TRUE;
                    }
                    if (text.startsWith("false", at)) {
                        at += 5;
                        return Boolean.FALSE;
                    }
                    if (text.startsWith("null", at)) {
                        at += 4;
                        return null;
                    }
                    if (c == '-' || (c >= '0' && c <= '9')) {
                        return number();
                    }
                    throw error("expected a value");
                }
            }
        }

        private String string() {
            expect('"');
            StringBuilder out = new StringBuilder();
            while (true) {
                if (at >= text.length()) {
                    throw error("unterminated string");
                }
                char c = text.charAt(at++);
                if (c == '"') {
                    return out.toString();
                }
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                if (at >= text.length()) {
                    throw error("unterminated string");
                }
                char e = text.charAt(at++);
                switch (e) {
                    case '"', '\\', '/' -> out.append(e);
                    case 'b' -> out.append('\b');
                    case 'f' -> out.append('\f');
                    case 'n' -> out.append('\n');
                    case 'r' -> out.append('\r');
                    case 't' -> out.append('\t');
                    case 'u' -> {
                        if (at + 4 > text.length()) {
                            throw error("a \\u escape needs four hex digits");
                        }
                        try {
                            out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                        } catch (NumberFormatException x) {
                            throw error("a \\u escape needs four hex digits");
                        }
                        at += 4;
                    }
                    default -> {
                        at--;
                        throw error("unknown escape \\" + e);
                    }
                }
            }
        }

        private Object number() {
            int start = at;
            boolean whole = true;
            while (at < text.length()) {
                char c = text.charAt(at);
                if (c == '.' || c == 'e' || c == 'E') {
                    whole = false;
                } else if (!(c == '-' || c == '+' || (c >= '0' && c <= '9'))) {
                    break;
                }
                at++;
            }
            String n = text.substring(start, at);
            try {
                if (whole) {
                    try {
                        return Long.parseLong(n);
                    } catch (NumberFormatException tooLong) {
                        return Double.parseDouble(n);
                    }
                }
                return Double.parseDouble(n);
            } catch (NumberFormatException e) {
                at = start;
                throw error("not a number: " + n);
            }
        }

        private void expect(char c) {
            if (peek() != c) {
                throw error("expected '" + c + "'");
            }
            at++;
        }

        private char peek() {
            return at < text.length() ? text.charAt(at) : '\u0000';
        }

        private void space() {
            while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
                at++;
            }
        }

        private IllegalArgumentException error(String what) {
            String found = at < text.length() ? "'" + text.charAt(at) + "'" : "the end of the line";
            return new IllegalArgumentException(what + " at column " + (at + 1) + ", found " + found);
        }
    }
}
