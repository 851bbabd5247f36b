package io.dlock.kotlin.snippets

import io.dlock.LockClient
import io.dlock.kotlin.release
import io.dlock.kotlin.tryAcquire
import io.dlock.kotlin.withLock
import io.dlock.kotlin.withPermits
import kotlin.time.Duration.Companion.seconds

/** The store a snippet writes to. */
interface Store {
    suspend fun decrement(item: String, token: Long): Boolean
}

/**
 * The snippet of docs/kotlin.md, compiled here; the page quotes the region between `tag::` and
 * `end::` and DocsTest checks that it matches.
 */
@Suppress("unused")
class KotlinSnippets(private val store: Store) {
    private fun ship(token: Long) {}

    private suspend fun export() {}

    // tag::usage[]
    val client = LockClient.connect("zookeeper://127.0.0.1:2181/shop")

    suspend fun buy(item: String): Boolean =
        client.lock("stock:$item").withLock(5.seconds) { lease ->
            store.decrement(item, lease.fencingToken())   // may suspend; released when this returns or throws
        }

    suspend fun shipOrders() {
        val lease = client.lock("orders").tryAcquire(2.seconds) ?: return   // null: someone else holds it
        try { ship(lease.fencingToken()) } finally { lease.release() }
    }

    suspend fun exportAll() = client.semaphore("exports", 4).withPermits(1, 30.seconds) { export() }
    // end::usage[]
}
