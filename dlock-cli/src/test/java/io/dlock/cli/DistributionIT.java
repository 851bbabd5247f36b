package io.dlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The distribution archives that {@code ./mvnw package} builds ({@code
 * target/dlock-cli-<version>-bin.tar.gz} and {@code .zip}): unpacked as a user would, {@code
 * bin/dlock --version} prints the version and every backend on the class path.
 */
class DistributionIT {

    private static Path archive(String extension) {
        String base = Objects.requireNonNull(
                System.getProperty("dlock.dist.base"), "dlock.dist.base (set by the failsafe configuration)");
        Path archive = Path.of(base + extension);
        assertThat(archive).as("built by the package phase").isRegularFile();
        return archive;
    }

    private static String run(List<String> command, Path dir) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true);
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        Process p = pb.start();
        try {
            byte[] output = p.getInputStream().readAllBytes(); // ends when the process does
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("%s ended", command).isTrue();
            String text = new String(output, StandardCharsets.UTF_8);
            assertThat(p.exitValue())
                    .as("exit status of %s:%n%s", command, text)
                    .isZero();
            return text;
        } finally {
            p.destroyForcibly();
        }
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void tarGz_unpacked_binDlockVersionPrintsVersionAndBackends(@TempDir Path dir) throws Exception {
        String version = System.getProperty("dlock.version");
        run(List.of("tar", "-xzf", archive(".tar.gz").toString(), "-C", dir.toString()), dir);
        Path home = dir.resolve("dlock-" + version);
        Path launcher = home.resolve("bin/dlock");
        assertThat(Files.isExecutable(launcher))
                .as("%s is executable", launcher)
                .isTrue();
        try (var jars = Files.list(home.resolve("lib"))) {
            assertThat(jars.map(p -> p.getFileName().toString()))
                    .contains("dlock-cli-" + version + ".jar", "dlock-core-" + version + ".jar")
                    .anyMatch(name -> name.startsWith("picocli-"));
        }

        String output = run(List.of(launcher.toString(), "--version"), dir);

        List<String> lines = output.lines().toList();
        assertThat(lines.get(0)).isEqualTo("dlock " + version);
        List<String> backends = new ArrayList<>(lines.subList(lines.indexOf("backends:") + 1, lines.size()));
        assertThat(backends).hasSize(5);
        assertThat(String.join("\n", backends))
                .containsPattern("etcd +etcd, etcds")
                .containsPattern("jdbc +jdbc")
                .containsPattern("memcached +memcached")
                .containsPattern("redis +redis, redis-cluster, redis-sentinel, rediss")
                .containsPattern("zookeeper +zookeeper");
    }

    @Test
    void zip_holdsTheLauncherAndTheJars() throws IOException {
        String version = System.getProperty("dlock.version");
        try (ZipFile zip = new ZipFile(archive(".zip").toFile())) {
            assertThat(zip.getEntry("dlock-" + version + "/bin/dlock")).isNotNull();
            assertThat(zip.getEntry("dlock-" + version + "/lib/dlock-cli-" + version + ".jar"))
                    .isNotNull();
            assertThat(zip.getEntry("dlock-" + version + "/lib/dlock-zookeeper-" + version + ".jar"))
                    .isNotNull();
        }
    }
}
