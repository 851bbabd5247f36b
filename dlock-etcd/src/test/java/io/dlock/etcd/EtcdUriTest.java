package io.dlock.etcd;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class EtcdUriTest {

    private static EtcdUri parse(String uri) {
        return EtcdUri.from(BackendUri.parse(URI.create(uri), LockOptions.defaults(), EtcdUri.PARAMETERS));
    }

    @Test
    void parse_severalHostsAndNamespace_givesEndpointsAndNamespace() {
        EtcdUri u = parse("etcd://h1:2379,h2:2380/apps/locks?leaseTime=5s&lockDelay=10s");
        assertThat(u.endpoints()).containsExactly(URI.create("http://h1:2379"), URI.create("http://h2:2380"));
        assertThat(u.namespace()).isEqualTo("apps/locks");
        assertThat(u.lockDelay()).isEqualTo(Duration.ofSeconds(10));
        assertThat(u.options().leaseTime()).isEqualTo(Duration.ofSeconds(5));
        assertThat(u.ttlSeconds()).isEqualTo(5);
        assertThat(u.tls()).isFalse();
    }

    @Test
    void parse_defaults_portAndNamespace() {
        EtcdUri u = parse("etcd://h1");
        assertThat(u.endpoints()).containsExactly(URI.create("http://h1:2379"));
        assertThat(u.namespace()).isEqualTo("dlock");
        assertThat(u.lockDelay()).isZero();
    }

    @Test
    void parse_etcds_usesHttpsAndKeepsUserButHidesPassword() {
        EtcdUri u = parse("etcds://alice:s3cr%40t@h1:2379/ns");
        assertThat(u.endpoints()).containsExactly(URI.create("https://h1:2379"));
        assertThat(u.user()).isEqualTo("alice");
        assertThat(u.password()).isEqualTo("s3cr@t");
        assertThat(u.toString()).contains("alice:***@").doesNotContain("s3cr");
    }

    @Test
    void parse_leaseTimeRoundedUpToWholeSeconds() {
        assertThat(parse("etcd://h/n?leaseTime=1500ms").ttlSeconds()).isEqualTo(2);
    }

    @Test
    void parse_badInput_clearErrors() {
        for (String bad : List.of("etcd://h1:notaport/n", "etcd://h1:0/n", "etcd://h1,/n", "etcd://:2379/n")) {
            assertThatThrownBy(() -> parse(bad))
                    .as(bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("etcd URI");
        }
        assertThatThrownBy(() -> parse("etcd://h1/n?lockDelay=soon"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("lockDelay");
        assertThatThrownBy(() -> parse("etcd://h1/n?bogus=1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("bogus");
        assertThatThrownBy(() -> parse("etcd://h1/n?ca=/etc/hosts"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("etcds://");
        assertThatThrownBy(() -> parse("etcds://h1/n?ca=/no/such/ca.pem"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not readable");
        assertThatThrownBy(() -> parse("etcd://alice@h1/n"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no password");
        assertThatThrownBy(() -> parse("etcd://h1/a//b"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("namespace");
    }
}
