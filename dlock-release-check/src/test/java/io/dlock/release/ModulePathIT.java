package io.dlock.release;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.module.Configuration;
import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.lang.module.ResolvedModule;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * Every published jar on the module path: each is a named module called after its package (an explicit
 * {@code module-info} in dlock-api, {@code Automatic-Module-Name} elsewhere), no two share a package, and
 * {@code java --module-path} resolves and validates them all. The jars alone, without their third-party
 * dependencies: an automatic module needs none to resolve, and the split packages of other projects' jars are
 * theirs to fix. Reads the jars {@code package} left in each module's {@code target/}.
 */
class ModulePathIT {

    /** The module name of each published jar: its package (STYLE.md, convention 1). */
    private static final Map<String, String> MODULE_NAMES = Map.ofEntries(
            Map.entry("dlock-api", "io.dlock"),
            Map.entry("dlock-core", "io.dlock.core"),
            Map.entry("dlock-zookeeper", "io.dlock.zookeeper"),
            Map.entry("dlock-redis", "io.dlock.redis"),
            Map.entry("dlock-etcd", "io.dlock.etcd"),
            Map.entry("dlock-jdbc", "io.dlock.jdbc"),
            Map.entry("dlock-memcached", "io.dlock.memcached"),
            Map.entry("dlock-testkit", "io.dlock.testkit"),
            Map.entry("dlock-cli", "io.dlock.cli"),
            Map.entry("dlock-spring-boot-starter", "io.dlock.spring.boot"),
            Map.entry("dlock-shedlock", "io.dlock.shedlock"),
            Map.entry("dlock-reactor", "io.dlock.reactor"),
            Map.entry("dlock-kotlin", "io.dlock.kotlin"),
            Map.entry("dlock-spring-integration", "io.dlock.spring.integration"));

    @Test
    void jar_alone_isNamedModuleOfItsPackage() {
        Map<String, String> names = new TreeMap<>();
        for (Map.Entry<String, Path> jar : jars().entrySet()) {
            Set<ModuleReference> found = ModuleFinder.of(jar.getValue()).findAll();
            assertThat(found).as(jar.getKey()).hasSize(1);
            names.put(jar.getKey(), found.iterator().next().descriptor().name());
        }
        assertThat(names)
                .as("module name of each published jar (Automatic-Module-Name, or module-info in dlock-api)")
                .isEqualTo(new TreeMap<>(MODULE_NAMES));
    }

    @Test
    void jars_together_splitNoPackage() {
        Map<String, List<String>> owners = new TreeMap<>();
        for (Map.Entry<String, Path> jar : jars().entrySet()) {
            ModuleDescriptor descriptor =
                    ModuleFinder.of(jar.getValue()).findAll().iterator().next().descriptor();
            for (String pkg : descriptor.packages()) {
                owners.computeIfAbsent(pkg, p -> new ArrayList<>()).add(jar.getKey());
            }
        }
        Map<String, List<String>> split = owners.entrySet().stream()
                .filter(e -> e.getValue().size() > 1)
                .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue));
        assertThat(split).as("packages in more than one published jar").isEmpty();
        assertThat(owners.get("io.dlock")).containsExactly("dlock-api");
        assertThat(owners.get("io.dlock.spi")).containsExactly("dlock-core");

        ModuleFinder finder = ModuleFinder.of(jars().values().toArray(Path[]::new));
        Configuration configuration = Configuration.resolve(
                finder, List.of(ModuleLayer.boot().configuration()), ModuleFinder.of(), MODULE_NAMES.values());
        assertThat(configuration.modules().stream().map(ResolvedModule::name)).containsAll(MODULE_NAMES.values());
    }

    @Test
    void java_modulePathOfAllJars_validatesAndListsEach() throws IOException, InterruptedException {
        String modulePath =
                jars().values().stream().map(Path::toString).collect(Collectors.joining(java.io.File.pathSeparator));

        Result validate = java("--module-path", modulePath, "--validate-modules");
        assertThat(validate.exitCode)
                .as("java --validate-modules:%n%s", validate.output)
                .isZero();

        Result list = java("--module-path", modulePath, "--add-modules", "ALL-MODULE-PATH", "--list-modules");
        assertThat(list.exitCode).as("java --list-modules:%n%s", list.output).isZero();
        Set<String> listed = list.output
                .lines()
                .map(line -> line.split("[@ ]", 2)[0])
                .filter(name -> name.startsWith("io.dlock"))
                .collect(Collectors.toSet());
        assertThat(listed).as(list.output).containsExactlyInAnyOrderElementsOf(MODULE_NAMES.values());
    }

    /** The main jar of each published module but the BOM, by artifactId. */
    private static Map<String, Path> jars() {
        String version = Reactor.version();
        Map<String, Path> jars = new HashMap<>();
        for (Reactor.Module module : Reactor.published()) {
            if (module.isJar()) {
                Path jar = module.artifact(version, ".jar");
                assertThat(jar)
                        .as("%s: its jar (run 'package' first)", module.artifactId())
                        .isRegularFile();
                jars.put(module.artifactId(), jar);
            }
        }
        return jars;
    }

    private record Result(int exitCode, String output) {}

    private static Result java(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        byte[] output = process.getInputStream().readAllBytes();
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("java exits").isTrue();
        return new Result(process.exitValue(), new String(output, StandardCharsets.UTF_8));
    }
}
