package io.dlock.release;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import java.util.zip.ZipEntry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.w3c.dom.Element;

/**
 * What a release would upload, checked before it does: for every published module, a flattened POM with the
 * metadata Maven Central requires, and for every jar module the main, {@code -sources} and {@code -javadoc} jars
 * (each with content) and a CycloneDX SBOM; and nothing unpublishable in the set. Runs only in the release
 * profile ({@code ./mvnw -Prelease -Dgpg.skip verify}), from its own Failsafe execution, after every published
 * module is built; not named {@code *Test} or {@code *IT}, so the ordinary runs leave it alone.
 */
class ReleaseBundleCheck {

    /** Modules that must never be uploaded: test-only and benchmark harnesses, and the parent no POM refers to. */
    private static final Set<String> NEVER_PUBLISHED = Set.of(
            "dlock-parent",
            "dlock-benchmarks",
            "dlock-release-check",
            "dlock-spring-boot4-it",
            "dlock-spring-integration7-it");

    static List<String> publishedModules() {
        return Reactor.published().stream().map(Reactor.Module::artifactId).toList();
    }

    static List<String> publishedJarModules() {
        return Reactor.published().stream()
                .filter(Reactor.Module::isJar)
                .map(Reactor.Module::artifactId)
                .toList();
    }

    @Test
    void publishedSet_excludesBenchmarksAndChecks() {
        assertThat(Reactor.excludedFromRelease())
                .as("%s's excludeArtifacts in the root pom.xml", Reactor.PUBLISHER)
                .containsAll(NEVER_PUBLISHED);
        assertThat(publishedModules()).doesNotContainAnyElementsOf(NEVER_PUBLISHED);
    }

    @Test
    void bom_declaresThePublisher_soDeployPutsItInTheBundle() {
        // The BOM has no parent: without its own publisher, 'deploy' would run maven-deploy-plugin there.
        Element bom = Reactor.parse(Reactor.published("dlock-bom").dir().resolve("pom.xml"));
        Set<String> excluded = Reactor.descendants(bom, "plugin").stream()
                .filter(plugin -> Reactor.text(plugin, "artifactId").equals(Reactor.PUBLISHER))
                .flatMap(plugin -> Reactor.descendants(plugin, "excludeArtifact").stream())
                .map(element -> element.getTextContent().trim())
                .collect(Collectors.toCollection(TreeSet::new));
        assertThat(excluded)
                .as("dlock-bom's %s excludeArtifacts (the same as the root's)", Reactor.PUBLISHER)
                .isEqualTo(new TreeSet<>(Reactor.excludedFromRelease()));
    }

    @Test
    void bom_listsExactlyThePublishedJars() {
        Element bom = Reactor.parse(Reactor.published("dlock-bom").dir().resolve("pom.xml"));
        Set<String> listed = Reactor.descendants(Reactor.child(bom, "dependencyManagement"), "artifactId").stream()
                .map(element -> element.getTextContent().trim())
                .collect(Collectors.toCollection(TreeSet::new));
        assertThat(listed).as("dlock-bom's artifacts").isEqualTo(new TreeSet<>(publishedJarModules()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("publishedModules")
    void flattenedPom_publishedModule_hasCentralMetadataAndNothingUnresolved(String artifactId) throws IOException {
        Path pomFile = Reactor.published(artifactId).flattenedPom();
        assertThat(pomFile)
                .as("%s: the flattened POM (flatten-maven-plugin)", artifactId)
                .isNotEmptyFile();
        String text = Files.readString(pomFile, StandardCharsets.UTF_8);
        assertThat(text)
                .as("%s: unresolved property in %s", artifactId, pomFile)
                .doesNotContain("${");

        Element pom = Reactor.parse(pomFile);
        assertThat(Reactor.text(pom, "artifactId")).isEqualTo(artifactId);
        for (String element : List.of("parent", "build", "profiles", "repositories", "pluginRepositories")) {
            assertThat(Reactor.child(pom, element).hasChildNodes())
                    .as("%s: <%s> in the published POM", artifactId, element)
                    .isFalse();
        }
        for (String element : List.of("groupId", "version", "name", "description", "url")) {
            assertThat(Reactor.text(pom, element))
                    .as("%s: <%s>", artifactId, element)
                    .isNotBlank();
        }
        Element license = Reactor.child(Reactor.child(pom, "licenses"), "license");
        assertThat(Reactor.text(license, "name"))
                .as("%s: licence name", artifactId)
                .isEqualTo("Apache-2.0");
        assertThat(Reactor.text(license, "url"))
                .as("%s: licence url", artifactId)
                .startsWith("https://");
        Element scm = Reactor.child(pom, "scm");
        assertThat(Reactor.text(scm, "url")).as("%s: scm url", artifactId).isNotBlank();
        assertThat(Reactor.text(scm, "connection"))
                .as("%s: scm connection", artifactId)
                .startsWith("scm:git:");
        Element developer = Reactor.child(Reactor.child(pom, "developers"), "developer");
        assertThat(Reactor.text(developer, "name"))
                .as("%s: a developer", artifactId)
                .isNotBlank();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("publishedJarModules")
    void jars_publishedModule_mainSourcesJavadocEachWithContent(String artifactId) throws IOException {
        Reactor.Module module = Reactor.published(artifactId);
        String version = Reactor.version();
        assertJarHas(module.artifact(version, ".jar"), "a .class", name -> name.endsWith(".class"));
        // dlock-kotlin's sources are Kotlin.
        assertJarHas(
                module.artifact(version, "-sources.jar"),
                "a .java or .kt",
                name -> name.endsWith(".java") || name.endsWith(".kt"));
        assertJarHas(module.artifact(version, "-javadoc.jar"), "index.html", name -> name.equals("index.html"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("publishedJarModules")
    void mainJar_publishedModule_carriesNoTestCode(String artifactId) throws IOException {
        Reactor.Module module = Reactor.published(artifactId);
        String version = Reactor.version();
        assertThat(module.artifact(version, "-tests.jar"))
                .as("%s: a test jar", artifactId)
                .doesNotExist();
        assertThat(module.artifact(version, "-test-sources.jar"))
                .as("%s: a test-sources jar", artifactId)
                .doesNotExist();
        Path testClassesDir = module.dir().resolve("target").resolve("test-classes");
        try (JarFile jar = new JarFile(module.artifact(version, ".jar").toFile())) {
            List<String> testClasses = jar.stream()
                    .map(ZipEntry::getName)
                    .filter(name -> name.endsWith(".class"))
                    .filter(name -> Files.exists(testClassesDir.resolve(name)))
                    .toList();
            assertThat(testClasses)
                    .as("%s: test classes in the main jar", artifactId)
                    .isEmpty();
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("publishedJarModules")
    void sbom_publishedModule_isCycloneDxOfThatModule(String artifactId) throws IOException {
        Path sbom = Reactor.published(artifactId).sbom();
        assertThat(sbom)
                .as("%s: the CycloneDX SBOM (cyclonedx-maven-plugin)", artifactId)
                .isNotEmptyFile();
        String json = Files.readString(sbom, StandardCharsets.UTF_8);
        assertThat(json).as("%s: %s", artifactId, sbom).contains("\"bomFormat\" : \"CycloneDX\"");
        assertThat(json).as("%s: %s names the module", artifactId, sbom).contains("\"name\" : \"" + artifactId + "\"");
    }

    private static void assertJarHas(Path jarFile, String what, Predicate<String> entry) throws IOException {
        assertThat(jarFile)
                .as("%s (a release uploads it; built with -Prelease)", jarFile)
                .isNotEmptyFile();
        try (JarFile jar = new JarFile(jarFile.toFile())) {
            assertThat(jar.stream().map(ZipEntry::getName).anyMatch(entry))
                    .as("%s holds %s", jarFile, what)
                    .isTrue();
        }
    }
}
