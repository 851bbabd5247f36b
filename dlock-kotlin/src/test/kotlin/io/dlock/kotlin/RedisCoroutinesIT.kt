package io.dlock.kotlin

import io.dlock.testkit.DlockServer
import io.dlock.testkit.RedisServer
import java.time.Duration
import org.junit.jupiter.api.BeforeAll
import org.junit.jupiter.api.BeforeEach
import org.junit.jupiter.api.TestInfo

/**
 * [CoroutinesContract] on a redis-server; one key prefix per test, marked as never used so that its
 * first grant need not wait out the data-loss fence.
 */
@DlockServer(DlockServer.Kind.REDIS)
class RedisCoroutinesIT : CoroutinesContract() {
    companion object {
        lateinit var server: RedisServer

        @JvmStatic
        @BeforeAll
        fun server(started: RedisServer) {
            server = started
        }
    }

    private lateinit var prefix: String

    @BeforeEach
    fun newPrefix(info: TestInfo) {
        prefix = "kt-" + info.testMethod.orElseThrow().name
        server.markFreshPrefix(prefix)
    }

    override fun backendName() = "redis"

    override fun shortLease() = "leaseTime=2s"

    override fun crashReleaseBound(): Duration = Duration.ofSeconds(5)

    override fun uri(query: String) = server.uri(prefix) + (if (query.isEmpty()) "" else "&$query")

    override fun uriVia(port: Int, query: String) = "redis://127.0.0.1:$port?keyPrefix=$prefix&$query"

    override fun serverPort() = server.port()
}
