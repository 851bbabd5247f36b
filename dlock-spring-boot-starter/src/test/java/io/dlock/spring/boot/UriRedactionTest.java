package io.dlock.spring.boot;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.spring.boot.internal.UriRedaction;
import org.junit.jupiter.api.Test;

class UriRedactionTest {
    @Test
    void redact_userInfoPassword_hidesPasswordKeepsUser() {
        assertThat(UriRedaction.redact("redis://default:s3cret@127.0.0.1:6379/0?keyPrefix=a"))
                .isEqualTo("redis://default:***@127.0.0.1:6379/0?keyPrefix=a");
        assertThat(UriRedaction.redact("redis://:p@ss@word@h:1")).isEqualTo("redis://:***@h:1");
    }

    @Test
    void redact_secretQueryParameters_hidesTheirValues() {
        assertThat(UriRedaction.redact("jdbc:postgresql://h/db?user=u&password=pw&dlockTable=t"))
                .isEqualTo("jdbc:postgresql://h/db?user=u&password=***&dlockTable=t");
        assertThat(UriRedaction.redact("etcd://h:2379?authToken=abc#x")).isEqualTo("etcd://h:2379?authToken=***#x");
    }

    @Test
    void redact_noSecrets_unchanged() {
        assertThat(UriRedaction.redact("zookeeper://h1:2181,h2:2181/app?sessionTimeout=10s"))
                .isEqualTo("zookeeper://h1:2181,h2:2181/app?sessionTimeout=10s");
    }
}
