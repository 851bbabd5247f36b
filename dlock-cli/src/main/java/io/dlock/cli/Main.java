package io.dlock.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * The {@code dlock} command: {@code java -jar dlock.jar <subcommand>}. Its subcommands are {@code
 * demo} ({@link DemoCommand}), {@code torture} ({@link TortureCommand}), {@code inspect}, {@code
 * release}, {@code watch}, {@code init} and {@code bench}; run {@code dlock help <subcommand>} for
 * their options. {@code bench} is {@code io.dlock.benchmarks.BenchCommand} where the benchmarks jar
 * is on the class path (it carries the Curator and Redisson anchors this jar does not); the {@code
 * ./dlock} launcher runs it from there.
 *
 * <p>Thread-safety: a command object holds parsed options; use one instance per invocation, from
 * one thread.
 */
@Command(
        name = "dlock",
        mixinStandardHelpOptions = true,
        versionProvider = Main.Version.class,
        description = "Distributed locks with one API over ZooKeeper, Redis, SQL, etcd and Memcached.",
        subcommands = {
            DemoCommand.class,
            TortureCommand.class,
            InspectCommand.class,
            ReleaseCommand.class,
            WatchCommand.class,
            InitCommand.class
        })
public final class Main implements Runnable {

    @Spec
    private CommandSpec spec;

    /**
     * Creates the top-level command; picocli fills in its fields.
     */
    public Main() {}

    /**
     * Runs {@code dlock} with {@code args} and exits the JVM with the command's exit code.
     *
     * <p>Blocking: until the subcommand is done. Thread-safety: a process entry point. On failure:
     * usage errors print a message and the usage to standard error and exit with status 2; a
     * subcommand's failure exits with the status it documents; anything thrown exits with status
     * 1 (after printing it), so that no server thread keeps the JVM alive.
     *
     * @param args the command line, for example {@code demo --stock 50}
     */
    public static void main(String[] args) {
        int status;
        try {
            status = commandLine().execute(args);
        } catch (Throwable e) { // an Error escaping picocli must still end the JVM and its servers
            e.printStackTrace();
            status = 1;
        }
        System.exit(status);
    }

    /**
     * A picocli command line for {@code dlock}, ready to {@link CommandLine#execute(String...)
     * execute}; tests and embedders redirect its output with {@code setOut}/{@code setErr}.
     *
     * @return a new command line
     */
    public static CommandLine commandLine() {
        return new CommandLine(new Main())
                .addSubcommand("bench", bench())
                .addSubcommand(new CommandLine.HelpCommand())
                .setCaseInsensitiveEnumValuesAllowed(true);
    }

    /** The benchmarks jar's {@code bench} where it is on the class path, else a pointer to it. */
    private static Object bench() {
        try {
            return Class.forName(BenchElsewhere.BENCH_CLASS).getConstructor().newInstance();
        } catch (ReflectiveOperationException | LinkageError e) {
            return new BenchElsewhere();
        }
    }

    /**
     * {@code dlock bench} where the benchmarks are not on the class path: this jar leaves out the
     * Curator and Redisson anchors the benchmark runs beside dlock, so the command says where it is.
     *
     * <p>Thread-safety: one invocation at a time.
     */
    @Command(
            name = "bench",
            description = {
                "Runs dlock side by side with Apache Curator, Redisson and the bare protocol of each server, on"
                        + " servers it starts itself, and prints ratios (from the benchmarks jar: ./dlock bench"
                        + " --help)."
            })
    static final class BenchElsewhere implements java.util.concurrent.Callable<Integer> {
        static final String BENCH_CLASS = "io.dlock.benchmarks.BenchCommand";

        @CommandLine.Unmatched
        private java.util.List<String> args = new java.util.ArrayList<>();

        @Spec
        private CommandSpec spec;

        @Override
        public Integer call() {
            spec.commandLine()
                    .getErr()
                    .println("dlock bench runs from the benchmarks jar, which carries the Curator and Redisson"
                            + " anchors: run ./dlock bench from a checkout (it builds dlock-benchmarks), or java -cp"
                            + " dlock-benchmarks/target/benchmarks.jar io.dlock.cli.Main bench");
            return 2;
        }
    }

    /**
     * Without a subcommand, reports the missing subcommand with the usage.
     *
     * <p>Blocking: never. Thread-safety: one invocation at a time. On failure: always throws.
     *
     * @throws CommandLine.ParameterException always: a subcommand is required
     */
    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(), "Missing subcommand: try 'dlock demo'");
    }

    /**
     * Reports the version from the jar's manifest and the backends found on the class path: every
     * {@code io.dlock.LockClientProvider} the {@link java.util.ServiceLoader} finds, with the URI
     * schemes of those that are {@code LockBackendProvider}s.
     *
     * <p>Thread-safety: stateless.
     */
    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() {
            String version = Main.class.getPackage().getImplementationVersion();
            java.util.List<String> lines = new java.util.ArrayList<>();
            lines.add("dlock " + (version == null ? "(development build)" : version));
            lines.add("Java " + System.getProperty("java.version") + " (" + System.getProperty("java.vm.name") + ")");
            java.util.List<String> backends = backends();
            lines.add(backends.isEmpty() ? "backends: none on the class path" : "backends:");
            backends.forEach(b -> lines.add("  " + b));
            return lines.toArray(new String[0]);
        }

        /** One line per provider: its module's name and its URI schemes, sorted. */
        static java.util.List<String> backends() {
            java.util.List<String> out = new java.util.ArrayList<>();
            for (io.dlock.LockClientProvider provider :
                    java.util.ServiceLoader.load(io.dlock.LockClientProvider.class)) {
                String name = provider.getClass()
                        .getSimpleName()
                        .replace("BackendProvider", "")
                        .toLowerCase(java.util.Locale.ROOT);
                String schemes = provider instanceof io.dlock.spi.LockBackendProvider b
                        ? String.join(", ", new java.util.TreeSet<>(b.schemes()))
                        : "";
                out.add(String.format(java.util.Locale.ROOT, "%-10s %s", name, schemes)
                        .strip());
            }
            java.util.Collections.sort(out);
            return out;
        }
    }
}
