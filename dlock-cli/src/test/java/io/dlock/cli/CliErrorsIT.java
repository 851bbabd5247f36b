package io.dlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code dlock torture} on a machine without the server it needs: run as a process whose PATH has
 * no {@code redis-server}, it says which Debian package to install and exits 1.
 */
class CliErrorsIT {

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void torture_redisServerMissing_namesThePackageToInstall(@TempDir Path empty) throws Exception {
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        ProcessBuilder pb = new ProcessBuilder(
                        java.toString(),
                        "-cp",
                        System.getProperty("java.class.path"),
                        Main.class.getName(),
                        "torture",
                        "--uri",
                        "embedded:redis",
                        "--duration",
                        "5s",
                        "--report",
                        "none")
                .redirectErrorStream(true);
        pb.environment().put("PATH", empty.toString());
        pb.environment().remove("DLOCK_REDIS_SERVER");
        Process p = pb.start();
        String output;
        try {
            output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        } finally {
            p.destroyForcibly();
        }

        assertThat(p.exitValue()).as(output).isEqualTo(1);
        assertThat(output)
                .contains("dlock torture: could not run: redis-server not found on the PATH")
                .contains("what to do: install the Debian package redis-server (sudo apt-get install redis-server)");
        assertThat(List.of(output.split("\n"))).noneMatch(l -> l.startsWith("report:"));
    }
}
