package io.dlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class RetryPolicyTest {

    @Test
    void defaults_equalDocumentedConstants() {
        RetryPolicy p = RetryPolicy.defaults();

        assertThat(p.baseSleep()).isEqualTo(RetryPolicy.DEFAULT_BASE_SLEEP).isEqualTo(Duration.ofMillis(100));
        assertThat(p.maxSleep()).isEqualTo(RetryPolicy.DEFAULT_MAX_SLEEP).isEqualTo(Duration.ofSeconds(5));
        assertThat(p.maxRetries()).isEqualTo(RetryPolicy.DEFAULT_MAX_RETRIES).isEqualTo(10);
        assertThat(RetryPolicy.defaults()).isSameAs(p);
    }

    @Test
    void exponentialBackoff_valid_keepsValues() {
        RetryPolicy p = RetryPolicy.exponentialBackoff(Duration.ofMillis(20), Duration.ofSeconds(1), 3);

        assertThat(p.baseSleep()).isEqualTo(Duration.ofMillis(20));
        assertThat(p.maxSleep()).isEqualTo(Duration.ofSeconds(1));
        assertThat(p.maxRetries()).isEqualTo(3);
        assertThat(p.toString()).contains("PT0.02S").contains("PT1S").contains("3 retries");
    }

    @Test
    void exponentialBackoff_boundaryValues_accepted() {
        RetryPolicy p = RetryPolicy.exponentialBackoff(Duration.ofNanos(1), Duration.ofNanos(1), 0);

        assertThat(p.maxSleep()).isEqualTo(p.baseSleep());
        assertThat(p.maxRetries()).isZero();
    }

    @Test
    void exponentialBackoff_nonPositiveBaseSleep_throwsIllegalArgument() {
        assertThatThrownBy(() -> RetryPolicy.exponentialBackoff(Duration.ZERO, Duration.ofSeconds(1), 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("baseSleep");
        assertThatThrownBy(() -> RetryPolicy.exponentialBackoff(Duration.ofMillis(-1), Duration.ofSeconds(1), 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("baseSleep");
    }

    @Test
    void exponentialBackoff_maxSleepBelowBase_throwsIllegalArgumentNamingBoth() {
        assertThatThrownBy(() -> RetryPolicy.exponentialBackoff(Duration.ofSeconds(2), Duration.ofSeconds(1), 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxSleep")
                .hasMessageContaining("baseSleep");
    }

    @Test
    void exponentialBackoff_negativeRetries_throwsIllegalArgument() {
        assertThatThrownBy(() -> RetryPolicy.exponentialBackoff(Duration.ofMillis(1), Duration.ofMillis(1), -1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxRetries")
                .hasMessageContaining("-1");
    }

    @Test
    void exponentialBackoff_nulls_throwNullPointerNamingArgument() {
        assertThatThrownBy(() -> RetryPolicy.exponentialBackoff(null, Duration.ofMillis(1), 1))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("baseSleep");
        assertThatThrownBy(() -> RetryPolicy.exponentialBackoff(Duration.ofMillis(1), null, 1))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("maxSleep");
    }

    @Test
    void equals_sameValues_equalWithSameHash() {
        RetryPolicy a = RetryPolicy.exponentialBackoff(Duration.ofMillis(100), Duration.ofSeconds(5), 10);
        RetryPolicy b = RetryPolicy.exponentialBackoff(Duration.ofMillis(100), Duration.ofSeconds(5), 10);

        assertThat(a).isEqualTo(b).hasSameHashCodeAs(b).isEqualTo(RetryPolicy.defaults());
        assertThat(a).isNotEqualTo(RetryPolicy.exponentialBackoff(Duration.ofMillis(100), Duration.ofSeconds(5), 9));
        assertThat(a).isNotEqualTo(RetryPolicy.exponentialBackoff(Duration.ofMillis(101), Duration.ofSeconds(5), 10));
        assertThat(a).isNotEqualTo(RetryPolicy.exponentialBackoff(Duration.ofMillis(100), Duration.ofSeconds(6), 10));
        assertThat(a).isNotEqualTo("RetryPolicy");
    }
}
