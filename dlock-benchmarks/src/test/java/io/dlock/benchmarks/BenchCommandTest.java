package io.dlock.benchmarks;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** Option checking of {@code dlock bench}: bad options exit 2 with a message and start nothing. */
class BenchCommandTest {

    private record Run(int status, String out, String err) {}

    private static Run run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int status = new CommandLine(new BenchCommand())
                .setOut(new PrintWriter(out))
                .setErr(new PrintWriter(err))
                .execute(args);
        return new Run(status, out.toString(), err.toString());
    }

    @Test
    void call_unknownWorkload_exits2NamingIt() {
        Run r = run("--workloads", "W9");
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err()).contains("unknown workload 'W9'").contains("W1, W2, W3, W4, W5, W6, COST, SCALE");
        assertThat(r.out()).doesNotContain("dlock bench {");
    }

    @Test
    void call_w6WithNoMoreThreadsThanLocks_exits2() {
        Run r = run("--workloads", "W6", "--w6-threads", "100", "--w6-locks", "100");
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err()).contains("--w6-threads (100) must exceed --w6-locks (100)");
        assertThat(r.out()).doesNotContain("dlock bench {");
    }

    @Test
    void call_w6AskedForWithoutAJdk21_exits2SayingHowToGetOne(@TempDir Path noJdk) {
        Run r = run("--workloads", "W6", "--jdk21", noJdk.toString());
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err())
                .contains("W6 runs virtual threads on a JDK 21 or newer")
                .contains(noJdk.resolve("bin").resolve("java").toString())
                .contains("--jdk21");
        assertThat(r.out()).doesNotContain("dlock bench {");
    }

    @Test
    void call_scaleWithZeroJvmsOrNames_exits2() {
        Run jvms = run("--workloads", "SCALE", "--scale-jvms", "1,0");
        assertThat(jvms.status()).isEqualTo(2);
        assertThat(jvms.err()).contains("--scale-jvms must be at least 1, was 0");
        Run names = run("--workloads", "SCALE", "--scale-names", "-5");
        assertThat(names.status()).isEqualTo(2);
        assertThat(names.err()).contains("--scale-names must be at least 1, was -5");
        Run threads = run("--workloads", "SCALE", "--scale-threads", "0");
        assertThat(threads.status()).isEqualTo(2);
        assertThat(threads.err()).contains("--scale-threads must be at least 1, was 0");
        Run many = run("--workloads", "SCALE", "--scale-jvms", "64");
        assertThat(many.status()).isEqualTo(2);
        assertThat(many.err()).contains("--scale-jvms: at most 32 worker JVMs");
        assertThat(many.out()).doesNotContain("dlock bench {");
    }

    @Test
    void call_zeroRounds_exits2() {
        Run r = run("--rounds", "0");
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err()).contains("--rounds must be at least 1, was 0");
    }

    @Test
    void call_malformedDuration_exits2() {
        Run r = run("--duration", "soon");
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err()).contains("'soon' is not a duration");
    }

    @Test
    void call_negativeDuration_exits2() {
        Run r = run("--warmup", "-1s");
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err()).contains("'-1s' is not a duration");
    }

    @Test
    void call_warmupOfAnUnknownWorkloadOrNotADuration_exits2() {
        Run unknown = run("--warmup-of", "W9=45s");
        assertThat(unknown.status()).isEqualTo(2);
        assertThat(unknown.err()).contains("--warmup-of: unknown workload 'W9'").contains("W1, W2");
        assertThat(unknown.out()).doesNotContain("dlock bench {");
        Run bad = run("--warmup-of", "W1=long");
        assertThat(bad.status()).isEqualTo(2);
        assertThat(bad.err()).contains("--warmup-of W1: 'long' is not a duration");
        Run negative = run("--warmup-of", "COST=-5s");
        assertThat(negative.status()).isEqualTo(2);
        assertThat(negative.err()).contains("--warmup-of COST: '-5s' is not a duration");
    }

    @Test
    void warmupOf_replacesTheWarmupOfItsWorkloadOnly_andQuickOverridesBoth() {
        BenchCommand cmd = new BenchCommand();
        new CommandLine(cmd).parseArgs("--warmup", "10s", "--warmup-of", "w1=45s", "--warmup-of", "COST=30s");
        RunConfig config = cmd.validate();
        assertThat(config.warmup("W1")).isEqualTo(java.time.Duration.ofSeconds(45));
        assertThat(config.warmup("COST")).isEqualTo(java.time.Duration.ofSeconds(30));
        assertThat(config.warmup("W2")).isEqualTo(java.time.Duration.ofSeconds(10));
        BenchCommand quick = new BenchCommand();
        new CommandLine(quick).parseArgs("--quick", "--warmup-of", "W1=45s");
        assertThat(quick.validate().warmup("W1")).isEqualTo(java.time.Duration.ofMillis(500));
    }

    @Test
    void call_unknownImplementation_exits2ListingKnownOnes() {
        Run r = run("--impls", "consul-lock");
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err())
                .contains("unknown implementation 'consul-lock'")
                .contains("curator")
                .contains("redisson-fair")
                .contains("jetcd-lock");
    }

    @Test
    void call_implementationOffTheChosenBackends_exits2() {
        Run r = run("--backends", "zookeeper", "--impls", "redisson");
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err()).contains("'redisson' runs on redis");
    }

    @Test
    void call_unknownBackend_exits2() {
        Run r = run("--backends", "consul");
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err()).contains("unknown backend 'consul'").contains("etcd");
    }

    @Test
    void call_etcdImplementationWithoutEtcd_exits2() {
        Run r = run("--backends", "redis", "--impls", "jetcd-lock");
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err()).contains("'jetcd-lock' runs on etcd");
    }

    @Test
    void call_moreW4ThreadsThanLocks_exits2() {
        Run r = run("--w4-locks", "4", "--w4-threads", "8");
        assertThat(r.status()).isEqualTo(2);
        assertThat(r.err()).contains("--w4-threads (8) must not exceed --w4-locks (4)");
    }
}
