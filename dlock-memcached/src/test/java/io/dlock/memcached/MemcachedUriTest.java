package io.dlock.memcached;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import java.net.URI;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class MemcachedUriTest {

    private static MemcachedUri parse(String uri) {
        return MemcachedUri.from(BackendUri.parse(URI.create(uri), LockOptions.defaults(), MemcachedUri.PARAMETERS));
    }

    @Test
    void from_severalHosts_keepsOrderAndDefaultPort() {
        MemcachedUri u = parse("memcached://a:1,b,c:3?keyPrefix=app1&leaseTime=5s");
        assertThat(u.hostList()).isEqualTo("a:1,b:11211,c:3");
        assertThat(u.keyPrefix()).isEqualTo("app1");
        assertThat(u.quarantine()).isEqualTo(Duration.ofSeconds(5));
        assertThat(u.options().leaseTime()).isEqualTo(Duration.ofSeconds(5));
    }

    @Test
    void from_credentials_keptForAsciiAuthAndHiddenInToString() {
        MemcachedUri u = parse("memcached://app:s3cret@h");
        assertThat(u.authenticates()).isTrue();
        assertThat(u.user()).isEqualTo("app");
        assertThat(u.password()).isEqualTo("s3cret");
        assertThat(u.toString()).contains("app:***@").doesNotContain("s3cret");
        assertThat(parse("memcached://h").authenticates()).isFalse();
    }

    @Test
    void from_quarantine_atLeastTheLease() {
        assertThat(parse("memcached://h?leaseTime=5s&quarantine=1m").quarantine())
                .isEqualTo(Duration.ofMinutes(1));
        assertThatThrownBy(() -> parse("memcached://h?leaseTime=5s&quarantine=2s"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("quarantine");
    }

    @Test
    void from_badInput_clearErrors() {
        assertThatThrownBy(() -> parse("memcached://user@h"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("without a password");
        assertThatThrownBy(() -> parse("memcached://user:s3c%20ret@h"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("password contains a space")
                .hasMessageNotContaining("s3c");
        assertThatThrownBy(() -> parse("memcached://h/app"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("path");
        assertThatThrownBy(() -> parse("memcached://h:0"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("invalid port '0'");
        assertThatThrownBy(() -> parse("memcached://h:x"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("invalid port 'x'");
        assertThatThrownBy(() -> parse("memcached://h,,g"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("empty host");
        assertThatThrownBy(() -> parse("memcached://h:1,h:1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("twice");
        assertThatThrownBy(() -> parse("memcached://h?leaseTime=500ms"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("leaseTime")
                .hasMessageContaining("at least 1s");
        // memcached reads an expiry over 30 days as a 1970 date: such a key would be stored expired.
        assertThat(parse("memcached://h?leaseTime=" + MemcachedUri.MAX_LEASE.toSeconds() + "s")
                        .options()
                        .leaseTime())
                .isEqualTo(Duration.ofSeconds(2_591_999));
        assertThatThrownBy(() -> parse("memcached://h?leaseTime=" + (MemcachedUri.MAX_LEASE.toSeconds() + 1) + "s"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'leaseTime' must be at most 2591999s");
        assertThatThrownBy(() -> parse("memcached://h?leaseTime=P31D"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("leaseTime")
                .hasMessageContaining("1970");
        assertThatThrownBy(() -> parse("memcached://h?keyPrefix=has%20space"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("keyPrefix");
        assertThatThrownBy(() -> parse("memcached://h?keyPrefix=app:l"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("keyPrefix")
                .hasMessageContaining("no ':'");
        assertThatThrownBy(() -> parse("memcached://h?keyPrefix=" + "p".repeat(17)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1 to 16");
        assertThatThrownBy(() -> parse("memcached://h?nope=1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown parameter 'nope'");
    }

    @Test
    void keys_longestNameAndPrefix_fitMemcachedsLimit() {
        assertThat("p".repeat(MemcachedUri.MAX_KEY_PREFIX).length() + ":w:".length() + 200 + ":".length() + 7 + 1 + 8)
                .isLessThanOrEqualTo(250);
    }
}
