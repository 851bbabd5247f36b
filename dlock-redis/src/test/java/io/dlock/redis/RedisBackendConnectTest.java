package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.LockBackendException;
import io.lettuce.core.RedisConnectionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** The retry around Lettuce's lost handshake reason; the connects themselves are in the ITs. */
class RedisBackendConnectTest {

    private static LockBackendException lost() {
        return new LockBackendException(
                null,
                "redis",
                "cannot connect",
                new RedisConnectionException(
                        "Unable to connect", new IllegalStateException("RedisHandshakeHandler not registered")));
    }

    @Test
    void retryLostHandshake_lostOnce_triesAgainAndReturnsTheSecondResult() {
        AtomicInteger calls = new AtomicInteger();
        RedisBackend none = RedisConnector.retryLostHandshake(() -> {
            if (calls.incrementAndGet() == 1) {
                throw lost();
            }
            return null;
        });
        assertThat(none).isNull();
        assertThat(calls).hasValue(2);
    }

    @Test
    void retryLostHandshake_alwaysLost_givesUpAfterTheLastAttempt() {
        AtomicInteger calls = new AtomicInteger();
        assertThatThrownBy(() -> RedisConnector.retryLostHandshake(() -> {
                    calls.incrementAndGet();
                    throw lost();
                }))
                .isInstanceOf(LockBackendException.class)
                .hasRootCauseMessage("RedisHandshakeHandler not registered");
        assertThat(calls).hasValue(RedisConnector.LOST_HANDSHAKE_ATTEMPTS);
    }

    @Test
    void retryLostHandshake_otherFailure_isNotRetried() {
        AtomicInteger calls = new AtomicInteger();
        assertThatThrownBy(() -> RedisConnector.retryLostHandshake(() -> {
                    calls.incrementAndGet();
                    throw new LockBackendException(
                            null,
                            "redis",
                            "authentication refused",
                            new RedisConnectionException("NOAUTH Authentication required."));
                }))
                .hasMessageContaining("authentication refused");
        assertThat(calls).hasValue(1);
    }

    @Test
    void reconnectDelay_maxSleepEqualToBaseSleep_isAcceptedAsAOneMillisecondRange() {
        var delay = RedisConnector.reconnectDelay(io.dlock.RetryPolicy.exponentialBackoff(
                java.time.Duration.ofMillis(100), java.time.Duration.ofMillis(100), 3));
        assertThat(delay.createDelay(10).toMillis()).isBetween(100L, 101L);
    }

    @Test
    void reconnectDelay_defaultPolicyUpTo5s_cappedAt250ms() {
        var delay = RedisConnector.reconnectDelay(io.dlock.RetryPolicy.defaults());
        assertThat(delay.createDelay(1).toMillis()).isBetween(100L, 250L);
        assertThat(delay.createDelay(20).toMillis()).isEqualTo(250L);
    }

    @Test
    void reconnectDelay_firstSleepLongerThanTheCap_keepsTheFirstSleep() {
        var delay = RedisConnector.reconnectDelay(io.dlock.RetryPolicy.exponentialBackoff(
                java.time.Duration.ofMillis(400), java.time.Duration.ofSeconds(5), 3));
        assertThat(delay.createDelay(20).toMillis()).isBetween(400L, 401L);
    }
}
