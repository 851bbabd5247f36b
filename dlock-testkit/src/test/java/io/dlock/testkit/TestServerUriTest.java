package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class TestServerUriTest {

    @Test
    void zookeeperUri_namespaceWithOrWithoutSlash_sameUri() {
        assertThat(EmbeddedZooKeeper.zookeeperUri(2181, "locks")).isEqualTo("zookeeper://127.0.0.1:2181/locks");
        assertThat(EmbeddedZooKeeper.zookeeperUri(2181, "/a/b")).isEqualTo("zookeeper://127.0.0.1:2181/a/b");
    }

    @Test
    void zookeeperUri_blankRootOrWhitespace_throwsNamingValue() {
        for (String bad : new String[] {"", " ", "/", "a b"}) {
            assertThatThrownBy(() -> EmbeddedZooKeeper.zookeeperUri(2181, bad))
                    .as("namespace '%s'", bad)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("'" + bad + "'");
        }
        assertThatThrownBy(() -> EmbeddedZooKeeper.zookeeperUri(2181, null))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void checkNamespace_shared_byEveryServersUri() {
        assertThat(TestServer.checkNamespace("/locks")).isEqualTo("locks");
        for (String bad : new String[] {"", " ", "/", "a b", "/\t"}) {
            assertThatThrownBy(() -> TestServer.checkNamespace(bad))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("namespace must be non-blank without whitespace")
                    .hasMessageEndingWith("was '" + bad + "'");
        }
        assertThatThrownBy(() -> TestServer.checkNamespace(null)).hasMessageEndingWith("was null");
    }
}
