package io.dlock.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.LockOptions;
import io.dlock.RetryPolicy;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class BackendUriTest {
    private static final Set<String> NONE = Set.of();

    private static BackendUri parse(String uri) {
        return BackendUri.parse(URI.create(uri), LockOptions.defaults(), NONE);
    }

    private static BackendUri parse(String uri, Set<String> backendParameters) {
        return BackendUri.parse(URI.create(uri), LockOptions.defaults(), backendParameters);
    }

    // ---- hosts, credentials, path

    @Test
    void parse_severalHostsAndPath_keepsAuthorityAndStripsSlash() {
        BackendUri u = parse("ZooKeeper://h1:2181,h2:2181,h3:2182/myapp/locks");

        assertThat(u.scheme()).isEqualTo("zookeeper");
        assertThat(u.authority()).isEqualTo("h1:2181,h2:2181,h3:2182");
        assertThat(u.path()).isEqualTo("myapp/locks");
        assertThat(u.user()).isNull();
        assertThat(u.password()).isNull();
        assertThat(u.parameters()).isEmpty();
        assertThat(u.options().leaseTime()).isEqualTo(LockOptions.DEFAULT_LEASE_TIME);
    }

    @Test
    void parse_noPath_emptyPath() {
        assertThat(parse("redis://localhost:6379").path()).isEmpty();
        assertThat(parse("redis://localhost:6379/").path()).isEmpty();
    }

    @Test
    void parse_userAndPassword_decoded() {
        BackendUri u = parse("redis://app%20user:p%40ss%3Aw%2Frd@cache:6379/2");

        assertThat(u.user()).isEqualTo("app user");
        assertThat(u.password()).isEqualTo("p@ss:w/rd");
        assertThat(u.authority()).isEqualTo("cache:6379");
        assertThat(u.path()).isEqualTo("2");
    }

    @Test
    void parse_userWithoutPassword_nullPassword() {
        BackendUri u = parse("redis://alice@cache:6379");

        assertThat(u.user()).isEqualTo("alice");
        assertThat(u.password()).isNull();
        assertThat(u.toString()).contains("alice@cache:6379");
    }

    /** In a URI's user info, '+' is a literal plus (form decoding would turn it into a space). */
    @Test
    void parse_passwordWithPlus_keepsPlus() {
        BackendUri u = parse("redis://u:a+b==@cache:6379");

        assertThat(u.password()).isEqualTo("a+b==");
    }

    @Test
    void toString_withPassword_hidesIt() {
        BackendUri u = parse("redis://alice:s3cret@cache:6379/0?leaseTime=3s");

        assertThat(u.toString()).doesNotContain("s3cret").contains("alice:***@cache:6379");
    }

    @ParameterizedTest
    @ValueSource(strings = {"redis:///0", "redis://u:p@/0", "zookeeper:/namespace"})
    void parse_noHost_throwsIllegalArgument(String uri) {
        assertThatThrownBy(() -> parse(uri))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no host")
                .message()
                .doesNotContain(":p@");
    }

    // ---- common parameters

    @ParameterizedTest
    @CsvSource({"3s, PT3S", "1500ms, PT1.5S", "2m, PT2M", "1h, PT1H", "PT3S, PT3S", "' 4s ', PT4S"})
    void parse_leaseTimeForms_parsed(String text, String expected) {
        BackendUri u = parse("redis://h?leaseTime=" + text.replace(" ", "%20"));

        assertThat(u.options().leaseTime()).isEqualTo(Duration.parse(expected));
    }

    @Test
    void parse_everyCommonParameter_applied() {
        BackendUri u = parse("zookeeper://h:2181/ns?leaseTime=3s&sessionTimeout=1500ms&connectTimeout=2s"
                + "&fair=false&renewal=false&retryBaseSleep=50ms&retryMaxSleep=2m&retryMaxRetries=3"
                + "&callbackThreads=4");

        LockOptions o = u.options();
        assertThat(o.leaseTime()).isEqualTo(Duration.ofSeconds(3));
        assertThat(o.sessionTimeout()).isEqualTo(Duration.ofMillis(1500));
        assertThat(o.connectTimeout()).isEqualTo(Duration.ofSeconds(2));
        assertThat(o.fair()).isFalse();
        assertThat(o.renewal()).isFalse();
        assertThat(o.retryPolicy())
                .isEqualTo(RetryPolicy.exponentialBackoff(Duration.ofMillis(50), Duration.ofMinutes(2), 3));
        assertThat(o.callbackThreads()).isEqualTo(4);
        assertThat(u.parameters()).isEmpty();
    }

    @Test
    void parse_fairTrueAndCaseInsensitive_parsed() {
        LockOptions base = LockOptions.builder().fair(false).renewal(false).build();

        BackendUri u = BackendUri.parse(URI.create("redis://h?fair=true&renewal=TRUE"), base, NONE);

        assertThat(u.options().fair()).isTrue();
        assertThat(u.options().renewal()).isTrue();
    }

    @Test
    void parse_noParameters_keepsBaseOptions() {
        LockOptions base = LockOptions.builder()
                .leaseTime(Duration.ofSeconds(7))
                .fair(false)
                .retryPolicy(RetryPolicy.exponentialBackoff(Duration.ofMillis(10), Duration.ofSeconds(1), 2))
                .build();

        BackendUri u = BackendUri.parse(URI.create("redis://h"), base, NONE);

        assertThat(u.options().leaseTime()).isEqualTo(Duration.ofSeconds(7));
        assertThat(u.options().fair()).isFalse();
        assertThat(u.options().retryPolicy()).isEqualTo(base.retryPolicy());
    }

    @Test
    void parse_oneRetryParameter_keepsTheOthersFromBase() {
        BackendUri u = parse("redis://h?retryMaxRetries=0");

        assertThat(u.options().retryPolicy())
                .isEqualTo(RetryPolicy.exponentialBackoff(
                        RetryPolicy.DEFAULT_BASE_SLEEP, RetryPolicy.DEFAULT_MAX_SLEEP, 0));
    }

    @Test
    void parse_backendParameters_passedThroughInOrder() {
        BackendUri u = parse("jdbc-like://h/db?dlockTable=my_locks&leaseTime=5s&ssl", Set.of("dlockTable", "ssl"));

        assertThat(u.parameters()).containsExactly(Map.entry("dlockTable", "my_locks"), Map.entry("ssl", ""));
        assertThat(u.options().leaseTime()).isEqualTo(Duration.ofSeconds(5));
        assertThat(u.toString()).contains("dlockTable");
        assertThatThrownBy(() -> u.parameters().put("x", "y")).isInstanceOf(UnsupportedOperationException.class);
    }

    // ---- bad parameters

    @Test
    void parse_unknownParameter_throwsNamingItAndListingKnown() {
        assertThatThrownBy(() -> parse("redis://u:s3cret@h?leasetime=3s", Set.of("db")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'leasetime'")
                .hasMessageContaining("leaseTime")
                .hasMessageContaining("sessionTimeout")
                .hasMessageContaining("fair")
                .hasMessageContaining("retryMaxRetries")
                .hasMessageContaining("db")
                .message()
                .doesNotContain("s3cret");
    }

    @ParameterizedTest
    @CsvSource({
        "leaseTime, abc",
        "leaseTime, 3",
        "leaseTime, 3 s",
        "leaseTime, 3sec",
        "leaseTime, -3s",
        "leaseTime, PT-3S",
        "leaseTime, 99999999999999999999s",
        "sessionTimeout, 1.5s",
        "connectTimeout, ''",
        "retryBaseSleep, x",
        "retryMaxSleep, 10d"
    })
    void parse_malformedDuration_throwsNamingParameter(String name, String value) {
        assertThatThrownBy(() -> parse("redis://h?" + name + "=" + value.replace(" ", "%20")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'" + name + "'");
    }

    @ParameterizedTest
    @ValueSource(strings = {"leaseTime=0s", "leaseTime=0ms", "sessionTimeout=PT0S", "connectTimeout=0m"})
    void parse_zeroDuration_throwsNamingParameter(String param) {
        String name = param.substring(0, param.indexOf('='));

        assertThatThrownBy(() -> parse("redis://h?" + param))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(name);
    }

    @ParameterizedTest
    @ValueSource(strings = {"retryBaseSleep=0ms", "retryMaxSleep=0s"})
    void parse_zeroRetrySleep_throwsIllegalArgument(String param) {
        assertThatThrownBy(() -> parse("redis://h?" + param)).isInstanceOf(IllegalArgumentException.class);
    }

    @ParameterizedTest
    @CsvSource({"fair, yes", "fair, 1", "fair, ''", "renewal, off"})
    void parse_malformedBoolean_throwsNamingParameter(String name, String value) {
        assertThatThrownBy(() -> parse("redis://h?" + name + "=" + value))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'" + name + "'")
                .hasMessageContaining("true or false");
    }

    @ParameterizedTest
    @CsvSource({"retryMaxRetries, many", "retryMaxRetries, 1.5", "callbackThreads, ''", "callbackThreads, 99999999999"})
    void parse_malformedInteger_throwsNamingParameter(String name, String value) {
        assertThatThrownBy(() -> parse("redis://h?" + name + "=" + value))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'" + name + "'");
    }

    @Test
    void parse_outOfRangeValues_throwIllegalArgument() {
        assertThatThrownBy(() -> parse("redis://h?callbackThreads=0"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("callbackThreads");
        assertThatThrownBy(() -> parse("redis://h?retryMaxRetries=-1"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxRetries");
        assertThatThrownBy(() -> parse("redis://h?retryBaseSleep=2s&retryMaxSleep=1s"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("retryMaxSleep");
        assertThatThrownBy(() -> parse("redis://h?retryMaxSleep=PT8761H"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("retryMaxSleep must be between 1ms and 365 days");
        assertThatThrownBy(() -> parse("redis://h?retryBaseSleep=0ms"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("retryBaseSleep must be between 1ms and 365 days");
        assertThat(parse("redis://h?retryBaseSleep=PT8760H&retryMaxSleep=PT8760H")
                        .options()
                        .retryPolicy()
                        .maxSleep())
                .isEqualTo(Duration.ofDays(365));
    }

    @Test
    void parse_crossFieldViolation_throwsIllegalArgumentWithoutPassword() {
        assertThatThrownBy(() -> parse("zookeeper://u:s3cret@h?sessionTimeout=1s&connectTimeout=11s"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("connectTimeout")
                .message()
                .doesNotContain("s3cret");
    }

    // ---- duration()

    @Test
    void duration_validForms_parsed() {
        assertThat(BackendUri.duration("d", "0ms")).isEqualTo(Duration.ZERO);
        assertThat(BackendUri.duration("d", "1500ms")).isEqualTo(Duration.ofMillis(1500));
        assertThat(BackendUri.duration("d", "2m")).isEqualTo(Duration.ofMinutes(2));
        assertThat(BackendUri.duration("d", "PT0.25S")).isEqualTo(Duration.ofMillis(250));
    }

    @Test
    void duration_negative_throwsNamingParameter() {
        assertThatThrownBy(() -> BackendUri.duration("waitTime", "PT-1S"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'waitTime'")
                .hasMessageContaining("PT-1S");
    }
}
