package io.dlock.kotlin

import io.dlock.testkit.DlockServer
import io.dlock.testkit.EmbeddedZooKeeper
import java.time.Duration
import org.junit.jupiter.api.BeforeAll
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.TestInfo

/** [CoroutinesContract] on an embedded ZooKeeper; one namespace per test. */
@DlockServer(DlockServer.Kind.ZOOKEEPER)
class ZooKeeperCoroutinesIT : CoroutinesContract() {
    companion object {
        lateinit var server: EmbeddedZooKeeper

        @JvmStatic
        @BeforeAll
        fun server(started: EmbeddedZooKeeper) {
            server = started
        }
    }

    private lateinit var namespace: String

    @BeforeEach
    fun newNamespace(info: TestInfo) {
        namespace = "kt-" + info.testMethod.orElseThrow().name
    }

    override fun backendName() = "zookeeper"

    override fun patient() = "sessionTimeout=10s"

    override fun shortLease() = "sessionTimeout=2s"

    override fun crashReleaseBound(): Duration = Duration.ofSeconds(6)

    override fun uri(query: String) = server.uri(namespace) + (if (query.isEmpty()) "" else "?$query")

    override fun uriVia(port: Int, query: String) = "zookeeper://127.0.0.1:$port/$namespace?$query"

    override fun serverPort() = server.port()
}
