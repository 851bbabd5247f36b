package io.dlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class DemoWorkerTest {

    @Test
    void parse_minimalArgs_defaults() {
        DemoWorker.Config config = DemoWorker.Config.parse(new String[] {"--port", "1234", "--client", "worker-1"});

        assertThat(config.port()).isEqualTo(1234);
        assertThat(config.client()).isEqualTo("worker-1");
        assertThat(config.lockUri()).isNull();
        assertThat(config.lockName()).isEqualTo("stock");
        assertThat(config.orderMinMs()).isEqualTo(5);
        assertThat(config.orderMaxMs()).isEqualTo(10);
        assertThat(config.holdAt()).isZero();
    }

    @Test
    void parse_allArgs_read() {
        DemoWorker.Config config = DemoWorker.Config.parse(new String[] {
            "--port", "1", "--client", "w", "--lock-uri", "zookeeper://h:1/ns", "--lock-name", "x",
            "--order-ms", "7", "--hold-at", "3", "--hold-for-ms", "2000", "--max-runtime-ms", "9"
        });

        assertThat(config.lockUri()).isEqualTo("zookeeper://h:1/ns");
        assertThat(config.lockName()).isEqualTo("x");
        assertThat(config.orderMinMs()).isEqualTo(7);
        assertThat(config.orderMaxMs()).isEqualTo(7);
        assertThat(config.holdAt()).isEqualTo(3);
        assertThat(config.holdForMs()).isEqualTo(2000);
        assertThat(config.maxRuntimeMs()).isEqualTo(9);
    }

    @Test
    void parse_badArgs_throwNamingTheProblem() {
        assertThatThrownBy(() -> DemoWorker.Config.parse(new String[] {"--port"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("pairs");
        assertThatThrownBy(() -> DemoWorker.Config.parse(new String[] {"--client", "w"}))
                .hasMessageContaining("--port and --client are required");
        assertThatThrownBy(() -> DemoWorker.Config.parse(new String[] {"--port", "x", "--client", "w"}))
                .hasMessageContaining("--port must be a number");
        assertThatThrownBy(() ->
                        DemoWorker.Config.parse(new String[] {"--port", "1", "--client", "w", "--order-ms", "10-5"}))
                .hasMessageContaining("MAX < MIN");
    }
}
