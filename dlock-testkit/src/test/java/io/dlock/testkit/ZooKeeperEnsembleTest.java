package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.Arrays;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Bad sizes and options are refused before anything starts; a leader's mntr answer is read. */
class ZooKeeperEnsembleTest {

    @ParameterizedTest
    @ValueSource(ints = {-1, 0, 1, 2, 4, 9})
    void start_sizeNotThreeFiveOrSeven_refused(int size) {
        assertThatThrownBy(() -> ZooKeeperEnsemble.start(size))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("size must be 3, 5 or 7, was " + size);
    }

    @Test
    void start_nullServerJvmOption_refusedBeforeAnythingStarts() {
        List<String> options = Arrays.asList("-Dx=y", null);
        assertThatThrownBy(() -> ZooKeeperEnsemble.start(3, options)).isInstanceOf(NullPointerException.class);
    }

    @Test
    void servingMillis_leader_readsLeaderUptime() {
        // The lines around it as ZooKeeper 3.9 writes them (tab-separated).
        String leader = "zk_version\t3.9.3-c26634f34490bb0ea7a09cc51e05ede3b4e320ee\n"
                + "zk_server_state\tleader\n"
                + "zk_leader_uptime\t13712\n"
                + "zk_uptime\t13807\n";
        assertThat(ZooKeeperEnsemble.servingMillis(leader)).isEqualTo(OptionalLong.of(13_712));
    }

    @Test
    void servingMillis_followerOrObserver_readsUptime() {
        assertThat(ZooKeeperEnsemble.servingMillis("zk_server_state\tfollower\nzk_uptime\t13453\n"))
                .isEqualTo(OptionalLong.of(13_453));
        assertThat(ZooKeeperEnsemble.servingMillis("zk_uptime  77\nzk_server_state  observer\n"))
                .isEqualTo(OptionalLong.of(77));
    }

    @Test
    void servingMillis_notServingOrGarbage_empty() {
        assertThat(ZooKeeperEnsemble.servingMillis("This ZooKeeper instance is not currently serving requests\n"))
                .isEmpty();
        assertThat(ZooKeeperEnsemble.servingMillis("zk_server_state\tstandalone\nzk_uptime\t5\n"))
                .isEmpty();
        assertThat(ZooKeeperEnsemble.servingMillis("zk_leader_uptime\tsoon\n")).isEmpty();
        assertThat(ZooKeeperEnsemble.servingMillis("zk_leader_uptime\t-5\n")).isEmpty();
        assertThat(ZooKeeperEnsemble.servingMillis("zk_server_state\tfollower\nzk_uptimes\t5\n"))
                .isEmpty();
        assertThat(ZooKeeperEnsemble.servingMillis("")).isEmpty();
    }
}
