package io.dlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

import io.dlock.testkit.RedisServer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * {@code @DistributedLock} and a direct lock from {@value VirtualThreadsMain#THREADS} virtual threads
 * each, on a real Redis, in a child JVM of JDK 25 (the build itself runs on JDK 17). Mutual
 * exclusion is checked with exact counters and fencing tokens; pinning with JFR's {@code
 * jdk.VirtualThreadPinned} events, since {@code -Djdk.tracePinnedThreads} is gone from JDK 24 on. A
 * deliberate pin (a class initializer that sleeps) proves the recording sees pins at all.
 */
class VirtualThreadsIT {
    /** The JDK home to run the child with; the default is where the build machines install JDK 25. */
    static final String JDK_PROPERTY = "dlock.test.jdk25";

    static final String DEFAULT_JDK = "/usr/lib/jvm/temurin-25-jdk-amd64";

    private static Path java25() {
        Path home = Path.of(System.getProperty(JDK_PROPERTY, DEFAULT_JDK));
        Path java = home.resolve("bin").resolve("java");
        if (!Files.isExecutable(java)) {
            fail("JDK 25 not found: " + java + " is not executable. Install the Debian package"
                    + " temurin-25-jdk (Adoptium's repository) or point -D" + JDK_PROPERTY + " at a JDK 25 home.");
        }
        return java;
    }

    @Test
    void annotationAndDirectLock_thousandVirtualThreadsOnJdk25_exclusiveAndNotPinnedByDlock() throws Exception {
        Path java = java25();
        List<String> output = new CopyOnWriteArrayList<>();
        try (RedisServer redis = RedisServer.start()) {
            redis.markFreshPrefix("vt");
            Process child = new ProcessBuilder(
                            java.toString(),
                            "-Xmx512m",
                            "-XX:FlightRecorderOptions:stackdepth=512",
                            "-cp",
                            System.getProperty("java.class.path"),
                            VirtualThreadsMain.class.getName(),
                            redis.uri("vt"))
                    .redirectErrorStream(true)
                    .start();
            try {
                Thread reader = new Thread(
                        () -> {
                            try (BufferedReader in = new BufferedReader(
                                    new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
                                for (String line; (line = in.readLine()) != null; ) {
                                    output.add(line);
                                }
                            } catch (java.io.IOException e) {
                                output.add("(output closed: " + e + ")");
                            }
                        },
                        "virtual-threads-child-output");
                reader.setDaemon(true);
                reader.start();
                if (!child.waitFor(180, TimeUnit.SECONDS)) {
                    fail("child JVM still running after 180 s:\n" + String.join("\n", output));
                }
                reader.join(TimeUnit.SECONDS.toMillis(10));
                assertThat(child.exitValue())
                        .as("exit code; output:\n%s", String.join("\n", output))
                        .isZero();
            } finally {
                child.destroyForcibly();
                child.waitFor(30, TimeUnit.SECONDS);
            }
            @SuppressWarnings("unchecked")
            List<String> left = ((List<String>) redis.command("KEYS", "vt:*"))
                    .stream().filter(k -> !k.endsWith(":epoch")).toList();
            assertThat(left).as("keys left on the server").isEmpty();
        }

        String result = output.stream()
                .filter(l -> l.startsWith("RESULT "))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no RESULT line:\n" + String.join("\n", output)));
        System.out.println(result); // the figures, in the test's output file
        Map<String, Integer> r = new HashMap<>();
        for (String field : result.substring("RESULT ".length()).split(" ")) {
            String[] kv = field.split("=", 2);
            r.put(kv[0], Integer.parseInt(kv[1]));
        }
        String why = String.join("\n", output);
        assertThat(r.get("feature")).as("the child's JDK").isEqualTo(25);
        int n = VirtualThreadsMain.THREADS;
        assertThat(r.get("counter")).as(why).isEqualTo(n + 1); // + the platform-thread warm-up call
        assertThat(r.get("direct")).as(why).isEqualTo(n + 1);
        assertThat(r.get("virtual")).as("calls that ran on a virtual thread").isEqualTo(n);
        assertThat(r.get("maxInside")).as("callers inside the method at once").isEqualTo(1);
        assertThat(r.get("tokenViolations")).as("fencing tokens not increasing").isZero();
        assertThat(r.get("control"))
                .as("the deliberate pin was recorded: JFR sees pins")
                .isGreaterThanOrEqualTo(1);
        assertThat(r.get("pinnedByDlock")).as(why).isZero();
    }
}
