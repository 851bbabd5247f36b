package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Bad sizes are refused before anything starts. */
class ZooKeeperEnsembleTest {

    @ParameterizedTest
    @ValueSource(ints = {-1, 0, 1, 2, 4, 9})
    void start_sizeNotThreeFiveOrSeven_refused(int size) {
        assertThatThrownBy(() -> ZooKeeperEnsemble.start(size))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("size must be 3, 5 or 7, was " + size);
    }
}
