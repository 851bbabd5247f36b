package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.ResourceLock;
import org.junit.jupiter.api.parallel.Resources;

@ResourceLock(Resources.SYSTEM_PROPERTIES)
class TimingTest {

    private String saved;

    @BeforeEach
    void save() {
        saved = System.getProperty(Timing.PROPERTY);
    }

    @AfterEach
    void restore() {
        if (saved == null) {
            System.clearProperty(Timing.PROPERTY);
        } else {
            System.setProperty(Timing.PROPERTY, saved);
        }
    }

    @Test
    void multiplier_unset_isOne() {
        System.clearProperty(Timing.PROPERTY);
        assertThat(Timing.multiplier()).isEqualTo(1.0);
        assertThat(Timing.scale(Duration.ofMillis(250))).isEqualTo(Duration.ofMillis(250));
    }

    @Test
    void scale_multiplierTwoAndAHalf_multipliesDuration() {
        System.setProperty(Timing.PROPERTY, "2.5");
        assertThat(Timing.multiplier()).isEqualTo(2.5);
        assertThat(Timing.scale(Duration.ofSeconds(2))).isEqualTo(Duration.ofSeconds(5));
        assertThat(Timing.scale(Duration.ofNanos(3))).isEqualTo(Duration.ofNanos(8)); // 7.5 rounds up
        assertThat(Timing.scale(Duration.ZERO)).isEqualTo(Duration.ZERO);
    }

    @Test
    void scale_hugeDuration_saturates() {
        System.setProperty(Timing.PROPERTY, "10");
        assertThat(Timing.scale(Duration.ofDays(365L * 100))).isEqualTo(Duration.ofNanos(Long.MAX_VALUE));
    }

    @Test
    void multiplier_zeroNegativeOrGarbage_throwsNamingProperty() {
        for (String bad : new String[] {"0", "-1", "abc", "NaN", "Infinity"}) {
            System.setProperty(Timing.PROPERTY, bad);
            assertThatThrownBy(Timing::multiplier)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(Timing.PROPERTY)
                    .hasMessageContaining(bad);
        }
    }

    @Test
    void scale_negativeDuration_throws() {
        assertThatThrownBy(() -> Timing.scale(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("-0.001");
    }
}
