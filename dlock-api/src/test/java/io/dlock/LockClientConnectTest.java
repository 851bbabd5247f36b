package io.dlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** {@link LockClient#connect} with no backend module on the classpath. */
class LockClientConnectTest {
    private static final String[] ALL_SCHEMES = {
        "zookeeper", "redis", "rediss", "redis-sentinel", "redis-cluster", "jdbc", "etcd", "memcached"
    };

    /** Every message in the chain, as a stack trace would print it. */
    private static String everyMessage(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            sb.append(c).append('\n');
        }
        return sb.toString();
    }

    @Test
    void connect_unknownScheme_throwsIllegalArgumentListingSchemes() {
        assertThatThrownBy(() -> LockClient.connect("consul://h:8500"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'consul'")
                .hasMessageContaining("consul://h:8500")
                .hasMessageContainingAll(ALL_SCHEMES);
    }

    @ParameterizedTest
    @CsvSource({
        "redis://localhost, io.dlock:dlock-redis",
        "REDIS://localhost:6379/0, io.dlock:dlock-redis",
        "rediss://localhost, io.dlock:dlock-redis",
        "redis-sentinel://h1:26379/mymaster, io.dlock:dlock-redis",
        "'redis-cluster://h1:7000,h2:7001', io.dlock:dlock-redis",
        "zookeeper://h1:2181/app, io.dlock:dlock-zookeeper",
        "jdbc:postgresql://db/app, io.dlock:dlock-jdbc",
        "jdbc:h2:mem:locks, io.dlock:dlock-jdbc",
        "etcd://h:2379, io.dlock:dlock-etcd",
        "memcached://h:11211, io.dlock:dlock-memcached"
    })
    void connect_knownSchemeWithoutBackendOnClasspath_namesModuleToAdd(String uri, String module) {
        assertThatThrownBy(() -> LockClient.connect(uri))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(module);
    }

    @Test
    void connect_malformedUri_throwsIllegalArgument() {
        assertThatThrownBy(() -> LockClient.connect("redis://host:6379/a b"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("malformed")
                .hasMessageContaining("at index")
                .hasNoCause(); // the parser's exception repeats the input, password included
    }

    @ParameterizedTest
    @ValueSource(strings = {"localhost", "//h:2181/app", "/var/locks", ""})
    void connect_noScheme_throwsIllegalArgumentListingSchemes(String uri) {
        assertThatThrownBy(() -> LockClient.connect(uri))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no scheme")
                .hasMessageContainingAll(ALL_SCHEMES);
    }

    @Test
    void connect_nulls_throwNullPointer() {
        assertThatThrownBy(() -> LockClient.connect(null)).isInstanceOf(NullPointerException.class);
        assertThatThrownBy(() -> LockClient.connect("redis://h", null)).isInstanceOf(NullPointerException.class);
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "redis://u:s3cret@h",
                "redis://:s3cret@h:6379/0",
                "consul://u:s3cret@h:8500",
                "redis://u:s3cret@h/a b",
                "consul://u:s3cret@h/a b"
            })
    void connect_uriWithPassword_messageLacksPassword(String uri) {
        Throwable e = catchThrowable(() -> LockClient.connect(uri));

        assertThat(e).isInstanceOf(IllegalArgumentException.class);
        assertThat(e.getMessage()).doesNotContain("s3cret");
    }

    /** A stack trace prints the causes too: the URISyntaxException's message holds the whole input. */
    @Test
    void connect_malformedUriWithPassword_causeChainLacksPassword() {
        Throwable e = catchThrowable(() -> LockClient.connect("redis://u:s3cret@h/a b"));

        assertThat(e).isInstanceOf(IllegalArgumentException.class);
        assertThat(everyMessage(e)).doesNotContain("s3cret");
    }

    /** Forgetting the scheme ("redis://") is a likely mistake; the credentials must still not leak. */
    @Test
    void connect_credentialsWithoutScheme_messageLacksPassword() {
        Throwable e = catchThrowable(() -> LockClient.connect("user:s3cret@localhost:6379"));

        assertThat(e).isInstanceOf(IllegalArgumentException.class);
        assertThat(e.getMessage()).doesNotContain("s3cret");
    }

    /** The backends split user info at the last '@'; redaction must hide the same span. */
    @Test
    void connect_passwordWithAtSign_messageLacksAnyPartOfPassword() {
        Throwable e = catchThrowable(() -> LockClient.connect("consul://u:s3cret@tail@h:8500"));

        assertThat(e).isInstanceOf(IllegalArgumentException.class);
        assertThat(e.getMessage()).doesNotContain("s3cret").doesNotContain("tail");
    }
}
