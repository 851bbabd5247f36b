package io.dlock.reactor.snippets;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.reactor.ReactorLocks;
import java.time.Duration;
import java.util.List;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * The snippet of docs/reactor.md, compiled here; the page quotes the region between {@code tag::}
 * and {@code end::} and DocsTest checks that it matches.
 */
@SuppressWarnings("unused")
final class ReactorSnippets {

    record Receipt(String order) {}

    record Report(long token) {}

    private final List<String> orders = List.of("order-1");

    private Flux<Receipt> shipAll(List<String> orders, long token) {
        return Flux.fromIterable(orders).map(Receipt::new);
    }

    private Mono<Report> export(long token) {
        return Mono.just(new Report(token));
    }

    private Mono<Void> work(Lease lease) {
        return Mono.empty();
    }

    void snippet() {
        // spotless:off
        // tag::usage[]
        LockClient client = LockClient.connect("redis://127.0.0.1:6379");

        // Run a Publisher under the lock; released when it completes, fails or is cancelled.
        Flux<Receipt> receipts = ReactorLocks.withLock(client.lock("orders"), Duration.ofSeconds(5),
                lease -> shipAll(orders, lease.fencingToken()));

        // Permits of a semaphore, the same way.
        Mono<Report> report = ReactorLocks.withPermits(client.semaphore("exports", 4), 1, Duration.ofSeconds(30),
                lease -> export(lease.fencingToken())).next();

        // The lease itself: yours to release (ReactorLocks.release never parks a thread).
        Mono<Long> token = ReactorLocks.acquire(client.lock("orders"), Duration.ZERO)
                .flatMap(lease -> work(lease).then(ReactorLocks.release(lease)).thenReturn(lease.fencingToken()));
        // end::usage[]
        // spotless:on
    }
}
