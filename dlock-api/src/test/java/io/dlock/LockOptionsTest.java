package io.dlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.function.Function;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class LockOptionsTest {

    @Test
    void defaults_equalDocumentedConstants() {
        LockOptions o = LockOptions.defaults();

        assertThat(o.leaseTime()).isEqualTo(LockOptions.DEFAULT_LEASE_TIME).isEqualTo(Duration.ofSeconds(30));
        assertThat(o.sessionTimeout()).isEqualTo(LockOptions.DEFAULT_SESSION_TIMEOUT);
        assertThat(o.connectTimeout()).isEqualTo(LockOptions.DEFAULT_CONNECT_TIMEOUT);
        assertThat(o.renewal()).isEqualTo(LockOptions.DEFAULT_RENEWAL);
        assertThat(o.fair()).isEqualTo(LockOptions.DEFAULT_FAIR);
        assertThat(o.callbackThreads()).isEqualTo(LockOptions.DEFAULT_CALLBACK_THREADS);
        assertThat(o.retryPolicy()).isEqualTo(RetryPolicy.defaults());
        assertThat(o.ticker()).isNotNull();
        assertThat(LockOptions.defaults()).isSameAs(o);
    }

    @Test
    void builder_fresh_startsFromDefaults() {
        LockOptions o = LockOptions.builder().build();

        assertThat(o.leaseTime()).isEqualTo(LockOptions.DEFAULT_LEASE_TIME);
        assertThat(o.sessionTimeout()).isEqualTo(LockOptions.DEFAULT_SESSION_TIMEOUT);
        assertThat(o.connectTimeout()).isEqualTo(LockOptions.DEFAULT_CONNECT_TIMEOUT);
        assertThat(o.renewal()).isEqualTo(LockOptions.DEFAULT_RENEWAL);
        assertThat(o.fair()).isEqualTo(LockOptions.DEFAULT_FAIR);
        assertThat(o.callbackThreads()).isEqualTo(LockOptions.DEFAULT_CALLBACK_THREADS);
    }

    @Test
    void builder_everySetter_applied() {
        RetryPolicy retry = RetryPolicy.exponentialBackoff(Duration.ofMillis(5), Duration.ofMillis(50), 1);
        Ticker ticker = () -> 42L;

        LockOptions o = LockOptions.builder()
                .leaseTime(Duration.ofSeconds(3))
                .sessionTimeout(Duration.ofSeconds(4))
                .connectTimeout(Duration.ofSeconds(5))
                .renewal(false)
                .fair(false)
                .retryPolicy(retry)
                .ticker(ticker)
                .callbackThreads(7)
                .build();

        assertThat(o.leaseTime()).isEqualTo(Duration.ofSeconds(3));
        assertThat(o.sessionTimeout()).isEqualTo(Duration.ofSeconds(4));
        assertThat(o.connectTimeout()).isEqualTo(Duration.ofSeconds(5));
        assertThat(o.renewal()).isFalse();
        assertThat(o.fair()).isFalse();
        assertThat(o.retryPolicy()).isSameAs(retry);
        assertThat(o.ticker()).isSameAs(ticker);
        assertThat(o.callbackThreads()).isEqualTo(7);
        assertThat(o.toString()).contains("leaseTime=PT3S").contains("fair=false");
    }

    static Stream<Arguments> durationSetters() {
        return Stream.of(
                Arguments.of("leaseTime", (Function<Duration, LockOptions.Builder>)
                        d -> LockOptions.builder().leaseTime(d)),
                Arguments.of("sessionTimeout", (Function<Duration, LockOptions.Builder>)
                        d -> LockOptions.builder().sessionTimeout(d)),
                Arguments.of("connectTimeout", (Function<Duration, LockOptions.Builder>)
                        d -> LockOptions.builder().connectTimeout(d)));
    }

    private static Duration smallest(String name) {
        return name.equals("leaseTime") ? Duration.ofMillis(100) : Duration.ofMillis(1);
    }

    @ParameterizedTest
    @MethodSource("durationSetters")
    void durationSetter_zeroNegativeOrBelowItsMinimum_throwsIllegalArgumentNamingArgument(
            String name, Function<Duration, LockOptions.Builder> setter) {
        Duration justBelow = smallest(name).minusNanos(1);
        for (Duration bad : new Duration[] {Duration.ZERO, Duration.ofSeconds(-1), justBelow}) {
            assertThatThrownBy(() -> setter.apply(bad))
                    .as("%s(%s)", name, bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(name)
                    .hasMessageContaining("at least " + smallest(name).toMillis() + "ms")
                    .hasMessageContaining(bad.toString());
        }
        assertThat(setter.apply(smallest(name))).isNotNull();
    }

    /** Longer values would overflow the nanosecond deadlines the client computes (at about 292 years). */
    @ParameterizedTest
    @MethodSource("durationSetters")
    void durationSetter_longerThanAYear_throwsIllegalArgumentNamingArgument(
            String name, Function<Duration, LockOptions.Builder> setter) {
        for (Duration bad : new Duration[] {Duration.ofDays(365).plusNanos(1), Duration.ofSeconds(Long.MAX_VALUE)}) {
            assertThatThrownBy(() -> setter.apply(bad))
                    .as("%s(%s)", name, bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(name)
                    .hasMessageContaining("at most 365 days");
        }
        assertThat(setter.apply(Duration.ofDays(365))).isNotNull();
    }

    @ParameterizedTest
    @MethodSource("durationSetters")
    void durationSetter_null_throwsNullPointerNamingArgument(
            String name, Function<Duration, LockOptions.Builder> setter) {
        assertThatThrownBy(() -> setter.apply(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining(name);
    }

    @Test
    void callbackThreads_outOfRange_throwsIllegalArgumentNamingArgument() {
        assertThatThrownBy(() -> LockOptions.builder().callbackThreads(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("callbackThreads")
                .hasMessageContaining("0");
        assertThatThrownBy(() -> LockOptions.builder().callbackThreads(65))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("65");
        assertThat(LockOptions.builder().callbackThreads(1).build().callbackThreads())
                .isEqualTo(1);
        assertThat(LockOptions.builder().callbackThreads(64).build().callbackThreads())
                .isEqualTo(64);
    }

    @Test
    void retryPolicyAndTicker_null_throwNullPointerNamingArgument() {
        assertThatThrownBy(() -> LockOptions.builder().retryPolicy(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("retryPolicy");
        assertThatThrownBy(() -> LockOptions.builder().ticker(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("ticker");
    }

    @Test
    void setter_failing_leavesBuilderUnchanged() {
        LockOptions.Builder b =
                LockOptions.builder().leaseTime(Duration.ofSeconds(5)).callbackThreads(3);

        assertThatThrownBy(() -> b.leaseTime(Duration.ZERO)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> b.callbackThreads(100)).isInstanceOf(IllegalArgumentException.class);

        LockOptions o = b.build();
        assertThat(o.leaseTime()).isEqualTo(Duration.ofSeconds(5));
        assertThat(o.callbackThreads()).isEqualTo(3);
    }

    @Test
    void toBuilder_roundTrip_keepsEveryValue() {
        Ticker ticker = () -> 7L;
        LockOptions original = LockOptions.builder()
                .leaseTime(Duration.ofSeconds(3))
                .sessionTimeout(Duration.ofSeconds(4))
                .connectTimeout(Duration.ofSeconds(5))
                .renewal(false)
                .fair(false)
                .retryPolicy(RetryPolicy.exponentialBackoff(Duration.ofMillis(1), Duration.ofMillis(2), 3))
                .ticker(ticker)
                .callbackThreads(9)
                .build();

        LockOptions copy = original.toBuilder().build();

        assertThat(copy).isNotSameAs(original);
        assertThat(copy.leaseTime()).isEqualTo(original.leaseTime());
        assertThat(copy.sessionTimeout()).isEqualTo(original.sessionTimeout());
        assertThat(copy.connectTimeout()).isEqualTo(original.connectTimeout());
        assertThat(copy.renewal()).isEqualTo(original.renewal());
        assertThat(copy.fair()).isEqualTo(original.fair());
        assertThat(copy.retryPolicy()).isEqualTo(original.retryPolicy());
        assertThat(copy.ticker()).isSameAs(ticker);
        assertThat(copy.callbackThreads()).isEqualTo(original.callbackThreads());
        assertThat(copy.toString()).isEqualTo(original.toString());
    }

    @Test
    void toBuilder_changed_leavesOriginalUnchanged() {
        LockOptions original = LockOptions.defaults();

        LockOptions changed = original.toBuilder()
                .leaseTime(Duration.ofSeconds(1))
                .fair(false)
                .build();

        assertThat(changed.leaseTime()).isEqualTo(Duration.ofSeconds(1));
        assertThat(changed.fair()).isFalse();
        assertThat(original.leaseTime()).isEqualTo(LockOptions.DEFAULT_LEASE_TIME);
        assertThat(original.fair()).isTrue();
    }

    @Test
    void build_connectTimeoutAboveTenSessionTimeouts_throwsIllegalStateNamingBoth() {
        LockOptions.Builder b =
                LockOptions.builder().sessionTimeout(Duration.ofSeconds(1)).connectTimeout(Duration.ofMillis(10_001));

        assertThatThrownBy(b::build)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("connectTimeout")
                .hasMessageContaining("sessionTimeout");
        assertThat(b.connectTimeout(Duration.ofSeconds(10)).build().connectTimeout())
                .isEqualTo(Duration.ofSeconds(10));
    }

    @Test
    void ticker_system_isMonotonic() {
        Ticker system = Ticker.system();
        long a = system.read();
        long b = system.read();

        assertThat(b).isGreaterThanOrEqualTo(a);
    }
}
