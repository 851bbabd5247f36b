package io.dlock.kotlin

import io.dlock.testkit.DlockServer
import io.dlock.testkit.PostgresServer
import java.time.Duration
import java.util.concurrent.atomic.AtomicInteger
import org.junit.jupiter.api.BeforeAll
import org.junit.jupiter.api.BeforeEach

/** [CoroutinesContract] on PostgreSQL (one server for the test run); one table per test. */
@DlockServer(value = [DlockServer.Kind.POSTGRES], scope = DlockServer.Scope.RUN)
class PostgresCoroutinesIT : CoroutinesContract() {
    companion object {
        private val TABLES = AtomicInteger()

        lateinit var postgres: PostgresServer

        @JvmStatic
        @BeforeAll
        fun database(started: PostgresServer) {
            postgres = started
        }
    }

    private lateinit var table: String

    @BeforeEach
    fun newTable() {
        table = "kt" + TABLES.incrementAndGet() + "_" + ProcessHandle.current().pid()
    }

    override fun backendName() = "jdbc"

    override fun shortLease() = "leaseTime=2s"

    override fun crashReleaseBound(): Duration = Duration.ofSeconds(5)

    override fun uri(query: String) =
        postgres.uri(table) + "&createTable=true" + (if (query.isEmpty()) "" else "&$query")

    override fun uriVia(port: Int, query: String) =
        "jdbc:postgresql://127.0.0.1:$port/${PostgresServer.DATABASE}?user=${PostgresServer.USER}" +
            "&password=${PostgresServer.PASSWORD}&dlockTable=$table&createTable=true&$query"

    override fun serverPort() = postgres.port()
}
