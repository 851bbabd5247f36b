package io.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import java.net.URI;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class RedisUriTest {

    private static RedisUri parse(String uri) {
        return RedisUri.from(BackendUri.parse(URI.create(uri), LockOptions.defaults(), RedisUri.PARAMETERS));
    }

    @Test
    void from_fullStandaloneUri_readsEveryPart() {
        RedisUri u = parse("rediss://alice:p%40ss@db.example:6380/4?keyPrefix=app&leaseTime=5s&fair=false");
        assertThat(u.mode()).isEqualTo(RedisUri.Mode.STANDALONE);
        assertThat(u.hosts()).containsExactly(new RedisUri.HostPort("db.example", 6380));
        assertThat(u.database()).isEqualTo(4);
        assertThat(u.user()).isEqualTo("alice");
        assertThat(u.password()).isEqualTo("p@ss");
        assertThat(u.tls()).isTrue();
        assertThat(u.keyPrefix()).isEqualTo("app");
        assertThat(u.options().leaseTime()).isEqualTo(Duration.ofSeconds(5));
        assertThat(u.options().fair()).isFalse();
        assertThat(u.toString()).doesNotContain("p@ss").contains("alice:***@");
    }

    @Test
    void from_defaults_portPrefixDatabase() {
        RedisUri u = parse("redis://localhost");
        assertThat(u.hosts()).containsExactly(new RedisUri.HostPort("localhost", 6379));
        assertThat(u.database()).isZero();
        assertThat(u.keyPrefix()).isEqualTo(RedisUri.DEFAULT_KEY_PREFIX);
        assertThat(u.tls()).isFalse();
        assertThat(u.user()).isNull();
        assertThat(u.password()).isNull();
    }

    @Test
    void from_sentinelAndCluster_readHostLists() {
        RedisUri s = parse("redis-sentinel://s1,s2:26380/2?master=mymaster&tls=true&verifyPeer=ca");
        assertThat(s.mode()).isEqualTo(RedisUri.Mode.SENTINEL);
        assertThat(s.hosts()).containsExactly(new RedisUri.HostPort("s1", 26379), new RedisUri.HostPort("s2", 26380));
        assertThat(s.master()).isEqualTo("mymaster");
        assertThat(s.tls()).isTrue();
        assertThat(s.verifyPeer()).isEqualTo("ca");
        RedisUri c = parse("redis-cluster://h1:7000,h2:7001");
        assertThat(c.mode()).isEqualTo(RedisUri.Mode.CLUSTER);
        assertThat(c.hosts()).containsExactly(new RedisUri.HostPort("h1", 7000), new RedisUri.HostPort("h2", 7001));
        // java.net.URI accepts an IPv6 literal only as a single host.
        assertThat(parse("redis://[::1]:7000").hosts()).containsExactly(new RedisUri.HostPort("::1", 7000));
    }

    @Test
    void from_badValues_throwNamingThem() {
        assertThatThrownBy(() -> parse("redis://h?master=x")).hasMessageContaining("'master'");
        assertThatThrownBy(() -> parse("rediss://h?tls=false")).hasMessageContaining("'tls'");
        assertThatThrownBy(() -> parse("redis://h?tls=yes")).hasMessageContaining("'tls'");
        assertThatThrownBy(() -> parse("redis://h?keyPrefix=")).hasMessageContaining("'keyPrefix'");
        assertThatThrownBy(() -> parse("redis://h:0")).hasMessageContaining("port");
        assertThatThrownBy(() -> parse("redis://h/-1")).hasMessageContaining("database");
        assertThatThrownBy(() -> parse("redis://h,")).hasMessageContaining("empty host");
    }

    @Test
    void from_waitReplicas_defaultsOffAndParses() {
        assertThat(parse("redis://h").waitReplicas()).isZero();
        RedisUri u = parse("redis://h?waitReplicas=2&waitTimeout=250ms");
        assertThat(u.waitReplicas()).isEqualTo(2);
        assertThat(u.waitTimeout()).isEqualTo(Duration.ofMillis(250));
        assertThat(u.toString()).contains("waitReplicas=2");
    }

    @Test
    void from_badWaitParameters_areRefusedNamingThem() {
        for (String bad : new String[] {"-1", "x", "65", ""}) {
            assertThatThrownBy(() -> parse("redis://h?waitReplicas=" + bad))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'waitReplicas'");
        }
        assertThatThrownBy(() -> parse("redis://h?waitReplicas=1&waitTimeout=0s"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'waitTimeout'");
        assertThatThrownBy(() -> parse("redis://h?waitReplicas=1&waitTimeout=-1s"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'waitTimeout'");
        assertThatThrownBy(() -> parse("redis://h?waitReplicas=1&waitTimeout=10s&connectTimeout=5s"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("shorter than connectTimeout");
        assertThatThrownBy(() -> parse("redis-cluster://h:7000?waitReplicas=1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("redis-cluster");
    }
}
