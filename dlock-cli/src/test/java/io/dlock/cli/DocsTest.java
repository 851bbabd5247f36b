package io.dlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The user-facing documentation (README.md, BENCHMARKS.md and docs/**) against the repository and
 * the {@code dlock} command: relative links lead to a file and, with a {@code #fragment}, to a
 * heading of it (GitHub's anchor rules); every {@code dlock <command>} and {@code --flag} named in
 * code exists; every Java or Kotlin code block is quoted from a source the build compiles (so it
 * cannot rot); the README stays a front door of at most 250 lines.
 */
class DocsTest {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final int README_MAX_LINES = 250;

    /** Flags of other programs that the docs name in code spans of their own. */
    private static final Set<String> FOREIGN_FLAGS = Set.of(
            "--auto-compaction-retention", // etcd
            "--max-txn-ops", // etcd
            "--unsafe-no-fsync", // etcd
            "--add-exports"); // javac, .mvn/jvm.config

    private static final Pattern LINK = Pattern.compile("(?<!!)\\[[^\\]]*]\\(([^)\\s]+)\\)");
    private static final Pattern CODE_SPAN = Pattern.compile("`([^`]+)`");
    /** A command line that runs dlock: {@code dlock ...}, {@code ./dlock ...}, {@code $ /opt/x/bin/dlock ...}. */
    private static final Pattern DLOCK_COMMAND = Pattern.compile(
            "^\\s*(?:\\$\\s+)?(?:\\S*/)?dlock\\s+((?:[a-z][a-z0-9-]*)(?:\\|[a-z][a-z0-9-]*)*|-[-a-z0-9]+)");

    private static final Pattern FLAG = Pattern.compile("(?<![\\w-])(--[a-z][a-z0-9-]*)");

    @Test
    void readme_isAtMost250Lines() throws IOException {
        assertThat(Files.readAllLines(ROOT.resolve("README.md")))
                .as("README.md is a front door: at most %d lines, the rest in docs/", README_MAX_LINES)
                .hasSizeLessThanOrEqualTo(README_MAX_LINES);
    }

    @Test
    void relativeLinks_leadToAFileAndAHeading() throws IOException {
        List<String> broken = new ArrayList<>();
        for (Path doc : docs()) {
            String text = withoutCode(read(doc));
            Matcher m = LINK.matcher(text);
            while (m.find()) {
                String target = m.group(1);
                if (target.matches("^[a-z][a-z0-9+.-]*:.*")) {
                    continue; // https:, mailto:
                }
                int hash = target.indexOf('#');
                String file = hash < 0 ? target : target.substring(0, hash);
                String fragment = hash < 0 ? null : target.substring(hash + 1);
                Path to = file.isEmpty() ? doc : doc.getParent().resolve(file).normalize();
                String where = ROOT.relativize(doc) + ": (" + target + ")";
                if (!Files.exists(to)) {
                    broken.add(where + " - no such file");
                } else if (fragment != null && !anchors(to).contains(fragment)) {
                    broken.add(where + " - no heading with that anchor in " + ROOT.relativize(to));
                }
            }
        }
        assertThat(broken).as("broken links").isEmpty();
    }

    @Test
    void commandsAndFlags_namedInTheDocs_existInTheCli() throws IOException {
        Map<String, Set<String>> options = cliOptions();
        List<String> unknown = new ArrayList<>();
        for (Path doc : docs()) {
            unknown.addAll(unknownCommands(ROOT.relativize(doc).toString(), read(doc), options));
        }
        assertThat(unknown).as("commands and options the docs name").isEmpty();
    }

    @Test
    void unknownCommands_findsAMissingCommandAndOption() throws IOException {
        String doc = "Run `./dlock inspect <uri> --jsn`, then\n\n```\n./dlock frobnicate --x\n"
                + "./dlock torture --uri embedded \\\n    --no-fenced --bogus\n```\nand `--nope`; "
                + "`dlock inspect|release --force|watch`, `dlock-cli`, `--fenced`.\n";
        assertThat(unknownCommands("doc", doc, cliOptions()))
                .hasSize(4)
                .anySatisfy(p -> assertThat(p).endsWith("has no option --jsn"))
                .anySatisfy(p -> assertThat(p).endsWith("no command 'dlock frobnicate'"))
                .anySatisfy(p -> assertThat(p).endsWith("has no option --bogus"))
                .anySatisfy(p -> assertThat(p).endsWith("the option --nope"));
    }

    static List<String> unknownCommands(String file, String markdown, Map<String, Set<String>> options) {
        Set<String> allFlags = new TreeSet<>();
        options.values().forEach(allFlags::addAll);
        List<String> unknown = new ArrayList<>();
        for (String code : codeFragments(markdown)) {
            String where = file + ": " + code.strip();
            Matcher c = DLOCK_COMMAND.matcher(code);
            if (c.find()) {
                String command = c.group(1);
                Set<String> allowed = new HashSet<>(options.get(""));
                if (!command.startsWith("-")) {
                    for (String name : command.split("\\|")) {
                        Set<String> sub = options.get(name);
                        if (sub == null) {
                            unknown.add(where + " - no command 'dlock " + name + "'");
                            allowed = null;
                            break;
                        } else {
                            allowed.addAll(sub);
                        }
                    }
                }
                Matcher f = FLAG.matcher(code.substring(c.start(1)));
                while (allowed != null && f.find()) {
                    if (!allowed.contains(f.group(1))) {
                        unknown.add(where + " - 'dlock " + command + "' has no option " + f.group(1));
                    }
                }
            } else if (code.startsWith("--")) {
                Matcher f = FLAG.matcher(code);
                if (f.lookingAt() && !allFlags.contains(f.group(1)) && !FOREIGN_FLAGS.contains(f.group(1))) {
                    unknown.add(where + " - no dlock command has the option " + f.group(1));
                }
            }
        }
        return unknown;
    }

    @Test
    void optionsTable_namesEveryCommonUriParameterAndNoOther() {
        String api = read(ROOT.resolve("docs/api.md"));
        int start = api.indexOf("\n## Options");
        assertThat(start).as("docs/api.md has an Options section").isNotNegative();
        int end = api.indexOf("\n## ", start + 1);
        Set<String> documented = new TreeSet<>();
        Set<String> builderMethods = new TreeSet<>();
        for (java.lang.reflect.Method m : LockOptions.Builder.class.getMethods()) {
            builderMethods.add(m.getName());
        }
        List<String> wrong = new ArrayList<>();
        for (String line : api.substring(start, end < 0 ? api.length() : end).split("\n")) {
            if (!line.startsWith("| `")) {
                continue;
            }
            String cell = line.substring(1, line.indexOf('|', 1));
            Matcher m = CODE_SPAN.matcher(cell);
            while (m.find()) {
                String name = m.group(1);
                documented.add(name);
                boolean known = cell.contains("builder only")
                        ? builderMethods.contains(name)
                        : BackendUri.COMMON_PARAMETERS.contains(name);
                if (!known) {
                    wrong.add(name);
                }
            }
        }
        assertThat(wrong).as("options in docs/api.md that the code lacks").isEmpty();
        assertThat(documented).as("docs/api.md's options table").containsAll(BackendUri.COMMON_PARAMETERS);
    }

    /** {@code <!-- snippet: path#tag -->} on the line before a code block the build compiles. */
    private static final Pattern SNIPPET_MARK = Pattern.compile("^<!-- snippet: (\\S+)#([\\w-]+) -->$");
    /**
     * Where a quoted source is compiled: a module of the reactor, or an example that {@code
     * scripts/examples} builds (run-tests and CI run it).
     */
    private static final Pattern COMPILED_SOURCE = Pattern.compile(
            "^(?:(dlock-[a-z0-9-]+)|examples/[a-z0-9-]+)/src/(?:main|test)/(?:java|kotlin)/.+\\.(?:java|kt)$");

    @Test
    void javaAndKotlinSnippets_areQuotedFromSourcesTheBuildCompiles() throws IOException {
        String modules = read(ROOT.resolve("pom.xml"));
        List<String> wrong = new ArrayList<>();
        int quoted = 0;
        for (Path doc : docs()) {
            List<String> lines = List.of(read(doc).split("\n", -1));
            for (int i = 0; i < lines.size(); i++) {
                String fence = lines.get(i).strip();
                if (!fence.equals("```java") && !fence.equals("```kotlin")) {
                    continue;
                }
                int end = i + 1;
                while (end < lines.size() && !lines.get(end).strip().startsWith("```")) {
                    end++;
                }
                String block = String.join("\n", lines.subList(i + 1, end));
                String where = ROOT.relativize(doc) + ":" + (i + 1);
                Matcher mark = SNIPPET_MARK.matcher(i > 0 ? lines.get(i - 1).strip() : "");
                if (!mark.matches()) {
                    wrong.add(where + " - a code block not quoted from a compiled source (put <!-- snippet:"
                            + " path#tag --> before it)");
                } else {
                    Matcher compiled = COMPILED_SOURCE.matcher(mark.group(1));
                    Path source = ROOT.resolve(mark.group(1));
                    if (!compiled.matches()
                            || (compiled.group(1) != null
                                    && !modules.contains("<module>" + compiled.group(1) + "</module>"))) {
                        wrong.add(where + " - " + mark.group(1) + " is not in a source root the build compiles");
                    } else if (!Files.exists(source)) {
                        wrong.add(where + " - no such file " + mark.group(1));
                    } else {
                        String region = region(read(source), mark.group(2));
                        if (region == null) {
                            wrong.add(where + " - no tag::" + mark.group(2) + "[] ... end::" + mark.group(2) + "[] in "
                                    + mark.group(1));
                        } else if (!region.equals(block)) {
                            wrong.add(
                                    where + " - differs from " + mark.group(1) + "#" + mark.group(2) + ":\n" + region);
                        } else {
                            quoted++;
                        }
                    }
                }
                i = end;
            }
        }
        assertThat(wrong).as("Java and Kotlin snippets in the docs").isEmpty();
        assertThat(quoted).as("snippets checked").isGreaterThanOrEqualTo(10);
    }

    @Test
    void region_dropsMarkersAndCommonIndent() {
        String source = "class A {\n    // spotless:off\n    // tag::x[]\n    int a;\n\n      // tag::y[]\n"
                + "      int b;\n      // end::y[]\n    // end::x[]\n}\n";
        assertThat(region(source, "x")).isEqualTo("int a;\n\n  int b;");
        assertThat(region(source, "y")).isEqualTo("int b;");
        assertThat(region(source, "z")).isNull();
    }

    /**
     * The lines between {@code tag::name[]} and {@code end::name[]}, without other tag and
     * formatter markers and without their common indentation; null if there is no such region.
     */
    static String region(String source, String tag) {
        List<String> kept = new ArrayList<>();
        boolean in = false;
        boolean closed = false;
        for (String line : source.split("\n", -1)) {
            if (line.contains("tag::" + tag + "[]")) {
                in = true;
            } else if (in && line.contains("end::" + tag + "[]")) {
                closed = true;
                break;
            } else if (in && !line.matches(".*(?:(?:tag|end)::[\\w-]+\\[]|spotless:o(?:n|ff)).*")) {
                kept.add(line);
            }
        }
        if (!closed) {
            return null;
        }
        int indent = kept.stream()
                .filter(l -> !l.isBlank())
                .mapToInt(l -> l.length() - l.stripLeading().length())
                .min()
                .orElse(0);
        List<String> out = new ArrayList<>();
        for (String line : kept) {
            out.add(line.isBlank() ? "" : line.substring(indent));
        }
        return String.join("\n", out);
    }

    @Test
    void anchor_followsGitHubsRules() {
        assertThat(anchor("Operating locks: `inspect`, `release --force`, `watch`"))
                .isEqualTo("operating-locks-inspect-release---force-watch");
        assertThat(anchor("Session mode (PostgreSQL, `mode=session`)"))
                .isEqualTo("session-mode-postgresql-modesession");
        assertThat(anchor("W1–W6 and COST × 2")).isEqualTo("w1w6-and-cost--2");
    }

    /** Option names per subcommand ("" = the top level), from picocli and, for bench, its source. */
    private static Map<String, Set<String>> cliOptions() throws IOException {
        Map<String, Set<String>> options = new HashMap<>();
        CommandLine main = Main.commandLine();
        options.put("", names(main));
        main.getSubcommands().forEach((name, sub) -> options.put(name, names(sub)));
        // 'bench' runs from dlock-benchmarks (it carries Curator and Redisson), which depends on this
        // module; read its picocli option names from the source.
        Path bench = ROOT.resolve("dlock-benchmarks/src/main/java/io/dlock/benchmarks/BenchCommand.java");
        Set<String> benchOptions = new TreeSet<>(Set.of("--help", "-h", "--version", "-V"));
        Matcher m = Pattern.compile("\"(--[a-z0-9-]+)\"").matcher(read(bench));
        while (m.find()) {
            benchOptions.add(m.group(1));
        }
        options.put("bench", benchOptions);
        return options;
    }

    private static Set<String> names(CommandLine command) {
        Set<String> names = new TreeSet<>();
        CommandLine.INegatableOptionTransformer negation = command.getNegatableOptionTransformer();
        for (OptionSpec o : command.getCommandSpec().options()) {
            for (String name : o.names()) {
                names.add(name);
                if (o.negatable()) {
                    names.add(negation.makeNegative(name, command.getCommandSpec()));
                }
            }
        }
        return names;
    }

    private static List<Path> docs() throws IOException {
        List<Path> docs = new ArrayList<>(List.of(ROOT.resolve("README.md"), ROOT.resolve("BENCHMARKS.md")));
        try (Stream<Path> s = Files.walk(ROOT.resolve("docs"))) {
            s.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        return docs;
    }

    /** Code blocks (a command continued with a trailing backslash is one fragment) and code spans. */
    static List<String> codeFragments(String markdown) {
        List<String> fragments = new ArrayList<>();
        boolean inBlock = false;
        StringBuilder pending = new StringBuilder();
        StringBuilder prose = new StringBuilder();
        for (String line : markdown.split("\n", -1)) {
            if (line.strip().startsWith("```")) {
                inBlock = !inBlock;
                continue;
            }
            if (inBlock) {
                if (line.endsWith("\\")) {
                    pending.append(line, 0, line.length() - 1).append(' ');
                } else {
                    fragments.add(pending.append(line).toString());
                    pending.setLength(0);
                }
            } else {
                prose.append(line).append('\n');
            }
        }
        // A code span may wrap over a line break in a paragraph.
        Matcher m = CODE_SPAN.matcher(prose);
        while (m.find()) {
            fragments.add(m.group(1).replace('\n', ' '));
        }
        return fragments;
    }

    /** The text with code blocks and code spans blanked, so that links inside them are not links. */
    private static String withoutCode(String markdown) {
        StringBuilder out = new StringBuilder();
        boolean inBlock = false;
        for (String line : markdown.split("\n", -1)) {
            if (line.strip().startsWith("```")) {
                inBlock = !inBlock;
                out.append('\n');
                continue;
            }
            out.append(inBlock ? "" : line).append('\n');
        }
        return CODE_SPAN.matcher(out).replaceAll("``");
    }

    private static final Map<Path, Set<String>> ANCHORS = new HashMap<>();

    /** The anchors GitHub gives the headings of a Markdown file (a duplicate gets -1, -2, ...). */
    private static Set<String> anchors(Path file) {
        return ANCHORS.computeIfAbsent(file, f -> {
            Set<String> anchors = new HashSet<>();
            if (!f.toString().endsWith(".md")) {
                return anchors;
            }
            Map<String, Integer> seen = new HashMap<>();
            boolean inBlock = false;
            for (String line : read(f).split("\n")) {
                if (line.strip().startsWith("```")) {
                    inBlock = !inBlock;
                } else if (!inBlock && line.matches("^#{1,6} .*")) {
                    String a = anchor(line.replaceFirst("^#+ ", ""));
                    int n = seen.merge(a, 1, Integer::sum);
                    anchors.add(n == 1 ? a : a + "-" + (n - 1));
                }
            }
            return anchors;
        });
    }

    /** GitHub's rule: lowercase, drop everything but letters, digits, '_', ' ' and '-', spaces to '-'. */
    static String anchor(String heading) {
        String text = heading.strip()
                .replaceAll("\\[([^\\]]*)]\\([^)]*\\)", "$1") // a link's text
                .replace("`", "")
                .replace("*", "")
                .toLowerCase(Locale.ROOT);
        return text.replaceAll("[^\\p{L}\\p{M}\\p{N}\\p{Pc} -]", "").replace(' ', '-');
    }

    private static String read(Path p) {
        try {
            return Files.readString(p, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
