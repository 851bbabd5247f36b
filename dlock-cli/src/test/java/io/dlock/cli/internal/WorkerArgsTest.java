package io.dlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Map;
import org.junit.jupiter.api.Test;

class WorkerArgsTest {

    @Test
    void parse_pairs_byNameWithoutDashes_laterWins() {
        assertThat(WorkerArgs.parse(new String[] {"--uri", "redis://h:1", "--lock", "a", "--lock", "b"}))
                .isEqualTo(Map.of("uri", "redis://h:1", "lock", "b"));
        assertThat(WorkerArgs.parse(new String[0])).isEmpty();
    }

    @Test
    void parse_oddCountOrBareName_failsNamingIt() {
        assertThatThrownBy(() -> WorkerArgs.parse(new String[] {"--uri"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("arguments must be --name value pairs");
        assertThatThrownBy(() -> WorkerArgs.parse(new String[] {"uri", "x"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("expected --name, got 'uri'");
    }
}
