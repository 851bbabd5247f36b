package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;
import static org.awaitility.Awaitility.await;

import io.dlock.Capability;
import io.dlock.Lease;
import io.dlock.LockBackendException;
import io.dlock.LockClient;
import io.dlock.core.Diagnostics;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * The corners one backend's tests used to visit and another's did not, driven on every backend
 * through the public API against its real server: a JUnit 5 test interface, run by each backend's
 * {@code *AdversarialIT} the way {@link ExclusiveLockContract} is.
 *
 * <ul>
 *   <li>clients with different lease times on one lock: a hand-over, then the new holder cut off;
 *   <li>namespaces that nest or share prefixes, lock names that look like the key layout's own
 *       segments;
 *   <li>every duration option at its allowed minimum and maximum, and just outside;
 *   <li>many locks held by one client for several renewal intervals;
 *   <li>credentials in every URI form the backend accepts, absent from every message and {@code
 *       toString()};
 *   <li>a brand-new deployment: the data-loss fence named by the client, the timeout's message and
 *       the inspector, over within a lease; {@code dlock init} ({@link NewDeployment}) marks only a
 *       deployment nobody used;
 *   <li>a server that is down or silent (a {@link FaultProxy} that resets, then blackholes):
 *       every acquire form with a wait fails with {@link LockBackendException} naming the server's
 *       {@code 127.0.0.1:<port>} and no credential (with a cause once the connection failed), never
 *       "someone else holds it"; a zero wait on a connection the client knows is down fails at
 *       once; plain {@code acquire()}, which has no wait, waits through the outage or fails with
 *       {@link LockBackendException}, and ends once the server is back.
 * </ul>
 *
 * <p>Data loss and a release that fails past the retry budget need a fault made the backend's own
 * way; they are each backend's own ITs. Long downgrade loops are in {@link PrimitivesContract}.
 *
 * <p>The hooks, like {@link LockFixture}'s, are called from the test thread: they never block
 * beyond preparing a namespace on the server (one round trip), must be thread-safe, and throw
 * {@link IllegalStateException} when the server cannot be prepared.
 */
public interface AdversarialContract extends LockFixture {

    /** Options that give a holder a lease (or session) of about 20 s, ten times {@link #shortLease()}. */
    String longLease();

    /**
     * Namespaces this backend's layout could confuse: nested ones, prefixes of each other, ones
     * ending in a segment of the layout. Each is given to {@link #uriIn(String, String)}.
     */
    List<String> neighbourNamespaces();

    /**
     * The URI of namespace {@code namespace} on the test's server (a fresh one per test: the fixture
     * makes it unique and ready, as it does its own), with extra query options.
     */
    String uriIn(String namespace, String options);

    /** The duration options this backend reads (as URI parameters), each checked at its limits. */
    default List<String> durationOptions() {
        return List.of("leaseTime", "connectTimeout", "retryBaseSleep", "retryMaxSleep");
    }

    /** The longest {@code leaseTime} this backend accepts (ISO-8601 hours, as {@code PT8760H}). */
    default Duration maxLeaseTime() {
        return Duration.ofDays(365);
    }

    /** How many locks one client holds in {@link #manyHeldLocks_noFalseLoss()}, with 200-character names. */
    default int manyHeldLocks() {
        return 20_000;
    }

    /**
     * Options for the client that holds {@link #manyHeldLocks()} locks: a 15 s lease, renewed every
     * 5 s, so that {@link #manyHeldLocks_noFalseLoss()}'s 11 s hold spans two renewals of each.
     */
    default String manyHeldLocksOptions() {
        return "leaseTime=15s";
    }

    /**
     * URIs of every form this backend accepts that carry {@code secret} as a credential (password,
     * token, userinfo), pointing at the test's server or at a closed port.
     */
    List<String> urisWithSecret(String secret);

    /** The loopback port of the test's server, for a {@link FaultProxy} in front of it. */
    int serverPort();

    /** The URI of the test's namespace on a server at {@code 127.0.0.1:port}, with extra options. */
    String uriAt(int port, String options);

    /**
     * Whether this backend keeps a data-loss fence (grants nothing for one lease on a server or
     * namespace without its markers): Redis, Memcached and etcd do; ZooKeeper and SQL do not.
     */
    default boolean keepsDataLossFence() {
        return false;
    }

    /**
     * A brand-new deployment nobody has used or marked (a fresh key prefix or namespace; for a
     * backend whose markers are per server, a server of its own), with extra options. The default
     * is a fresh namespace of {@link #uriIn}.
     *
     * @param options extra URI options
     * @return its URI and what stops it (nothing, by default)
     */
    default Deployment freshDeployment(String options) {
        return new Deployment(uriIn("fresh" + Long.toString(System.nanoTime(), 36), options), () -> {});
    }

    /** A deployment {@link #freshDeployment} made: its URI, and how to stop what it started. */
    record Deployment(String uri, Runnable stop) implements AutoCloseable {
        @Override
        public void close() {
            stop.run();
        }
    }

    // ---- the data-loss fence, visible; and 'dlock init'

    @Test
    default void freshDeployment_fenceIsNamedEverywhere_andInitMarksOnlyANewOne() throws Exception {
        // Long enough that a fence counted from a server's start (a class's server may be seconds old)
        // still has seconds to run when the test looks at it.
        Duration lease = Duration.ofSeconds(6);
        try (Deployment fresh = freshDeployment("leaseTime=6s");
                LockClient c = LockClient.connect(fresh.uri())) {
            io.dlock.spi.LockInspector inspector = Diagnostics.inspector(c).orElseThrow();
            if (!keepsDataLossFence()) {
                assertThat(inspector.fences()).isEmpty();
                assertThat(NewDeployment.mark(fresh.uri())).contains("nothing to do");
                try (Lease l = c.lock("first").tryAcquire(Duration.ZERO).orElseThrow()) {
                    assertThat(l.isValid()).isTrue();
                }
                return;
            }
            // Before anything: the inspector sees no marker, a fence the next acquire will start.
            assertThat(inspector.fences()).isNotEmpty();
            long t0 = System.nanoTime();
            assertThat(c.lock("first").tryAcquire(Duration.ofMillis(300))).isEmpty();
            // The fence is named: by the client, in the timeout's message, by the inspector.
            await().atMost(Duration.ofSeconds(2))
                    .until(() -> Diagnostics.dataLossFence(c).isPresent());
            assertThat(Diagnostics.dataLossFence(c)).hasValueSatisfying(f -> assertThat(f.until())
                    .isAfter(java.time.Instant.now())
                    .isBefore(java.time.Instant.now().plus(lease).plusSeconds(3)));
            assertThatFenceTimeout(c);
            assertThat(inspector.fences()).isNotEmpty().allSatisfy(f -> assertThat(f.until())
                    .isAfter(java.time.Instant.now()));
            // It ends within a lease (plus the backend's slack), and the lock is granted then.
            await().atMost(Timing.scale(lease.plusSeconds(4)))
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> {
                        Optional<Lease> l = c.lock("first").tryAcquire(Duration.ZERO);
                        l.ifPresent(Lease::close);
                        return l.isPresent();
                    });
            assertThat(Duration.ofNanos(System.nanoTime() - t0)).isLessThan(lease.plusSeconds(3));
            assertThat(inspector.fences()).isEmpty();
            // The client's own estimate of the end may trail the server's by its clock's resolution.
            await().atMost(Duration.ofSeconds(2))
                    .until(() -> Diagnostics.dataLossFence(c).isEmpty());
            // Used now: 'init' refuses and changes nothing (the lock is still granted at once).
            assertThatThrownBy(() -> NewDeployment.mark(fresh.uri()))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("not marked");
            c.lock("first").tryAcquire(Duration.ZERO).orElseThrow().close();
        }
        // A brand-new one, marked: granted at once, no fence anywhere; marking it again is refused.
        try (Deployment fresh = freshDeployment("leaseTime=6s")) {
            assertThat(NewDeployment.mark(fresh.uri())).contains("marked");
            try (LockClient c = LockClient.connect(fresh.uri())) {
                assertThat(Diagnostics.inspector(c).orElseThrow().fences()).isEmpty();
                try (Lease l = c.lock("first").tryAcquire(Duration.ZERO).orElseThrow()) {
                    assertThat(l.isValid()).isTrue();
                    assertThatThrownBy(() -> NewDeployment.mark(fresh.uri())).isInstanceOf(IllegalStateException.class);
                    assertThat(l.isValid()).isTrue();
                }
                assertThat(Diagnostics.dataLossFence(c)).isEmpty();
            }
        }
    }

    /** A wait that a fence ended says so, and is a timeout (not an outage). */
    private static void assertThatFenceTimeout(LockClient c) {
        assertThatThrownBy(() -> c.withLock("first", Duration.ofMillis(200), () -> null))
                .isInstanceOf(io.dlock.LockTimeoutException.class)
                .hasMessageContaining("data-loss fence")
                .hasMessageContaining("until");
    }

    // ---- unreachable is not busy

    @Test
    default void serverDownOrSilent_acquireFailsWithBackendExceptionWithinWaitPlusConnectTimeout() throws Exception {
        Duration connectTimeout = Duration.ofSeconds(2);
        Duration margin = Timing.scale(Duration.ofSeconds(3));
        ExecutorService plain = Executors.newSingleThreadExecutor();
        try (FaultProxy proxy = FaultProxy.start(serverPort());
                LockClient c = LockClient.connect(
                        uriAt(proxy.port(), LockFixture.options(shortLease(), "connectTimeout=2s")))) {
            String uri = uriAt(proxy.port(), LockFixture.options(shortLease(), "connectTimeout=2s"));
            Outage down = new Outage("stopped", proxy.port(), secretsIn(uri), true);
            c.lock("down")
                    .tryAcquire(Timing.scale(Duration.ofSeconds(10)))
                    .orElseThrow()
                    .close();

            proxy.refuse(); // the server is down: connections are reset
            proxy.resetConnections();
            assertEveryFormFails(c, "down", down, connectTimeout, margin);
            // The client has seen the reset by now: one attempt with no wait is answered at once,
            // not after a request timeout (connectTimeout is 2 s), on a lock it asked for during
            // the outage and on ones it did not (which no earlier request of the same lock answers).
            // 1.5 s: under the 2 s a request timeout would take, with room for a loaded machine.
            Duration atOnce = Timing.scale(Duration.ofMillis(1500));
            for (String name : List.of("down", "down-z0", "down-z1", "down-z2")) {
                down.assertFails("tryAcquire(ZERO) of '" + name + "', connection known down", atOnce, () -> c.lock(name)
                        .tryAcquire(Duration.ZERO));
            }
            // acquire() has no wait to bound it: where the backend's client retries the request it
            // waits through the outage; where the request itself fails (a refused SQL connection, an
            // expired session) it throws LockBackendException. Either way it ends once the server is
            // back, and never as if someone held the lock.
            Future<Boolean> plainWait = plain.submit(() -> {
                c.lock("down-p").acquire().close(); // closed by the thread that owns it
                return true;
            });
            Thread.sleep(connectTimeout.plus(Duration.ofMillis(500)).toMillis()); // the outage lasts

            proxy.pass(); // back up
            awaitBackUp(c, "down");
            try {
                assertThat(plainWait.get(Timing.scale(Duration.ofSeconds(30)).toMillis(), TimeUnit.MILLISECONDS))
                        .isTrue();
            } catch (java.util.concurrent.ExecutionException e) {
                assertThat(e.getCause()).as("acquire() that the outage ended").isInstanceOf(LockBackendException.class);
            }

            proxy.blackhole(FaultProxy.Direction.BOTH); // silent: nothing comes back, nothing is reset
            Outage silent = new Outage("blackholed", proxy.port(), secretsIn(uri), false);
            silent.assertFails(
                    "tryAcquire(500 ms)",
                    Duration.ofMillis(500).plus(connectTimeout).plus(margin),
                    () -> c.lock("silent").tryAcquire(Duration.ofMillis(500)));
            assertEveryFormFails(c, "silent", silent, connectTimeout, margin);
            proxy.pass(); // heard again: the same client works without a restart
            awaitBackUp(c, "silent");
        } finally {
            plain.shutdownNow();
        }
        // A request the server ran while its reply was lost leaves a grant nobody took: it goes with
        // its (short) lease, and the next holder finds the lock free.
        for (String name : List.of(
                "down",
                "silent",
                "down-p",
                "silent-p",
                "down-z0",
                "down-z1",
                "down-z2",
                "down-a",
                "down-b",
                "silent-a",
                "silent-b")) {
            client(patient())
                    .lock(name)
                    .tryAcquire(Timing.scale(crashReleaseBound().multipliedBy(2)))
                    .orElseThrow()
                    .close();
        }
    }

    /** Waits until {@code name} can be acquired again through {@code c}, after the proxy passes. */
    private static void awaitBackUp(LockClient c, String name) {
        await().atMost(Timing.scale(Duration.ofSeconds(30)))
                .ignoreException(LockBackendException.class)
                .until(() -> {
                    Optional<Lease> l = c.lock(name).tryAcquire(Duration.ofSeconds(1));
                    l.ifPresent(Lease::close);
                    return l.isPresent();
                });
    }

    /**
     * Every acquire form the backend supports ({@link LockClient#capabilities()}) fails with {@link
     * LockBackendException} within its wait plus one request timeout: {@code tryAcquire} with no
     * wait and with 1 s, {@code acquireAsync}, {@code withLock}, {@code asJavaLock().tryLock}, a
     * semaphore and a multi-lock.
     */
    private static void assertEveryFormFails(
            LockClient c, String name, Outage outage, Duration connectTimeout, Duration margin) {
        Duration second = Duration.ofSeconds(1);
        Duration bound = second.plus(connectTimeout).plus(margin);
        outage.assertFails("tryAcquire(ZERO)", connectTimeout.plus(margin), () -> c.lock(name)
                .tryAcquire(Duration.ZERO));
        outage.assertFails("tryAcquire(1 s)", bound, () -> c.lock(name).tryAcquire(second));
        outage.assertFails("acquireAsync(1 s)", bound, () -> {
            try {
                return c.lock(name).acquireAsync(second).get(bound.toMillis() * 2, TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                throw e.getCause() instanceof Exception cause ? cause : e;
            }
        });
        outage.assertFails("withLock(1 s)", bound, () -> c.withLock(name, second, () -> "ran"));
        outage.assertFails("asJavaLock().tryLock(1 s)", bound, () -> {
            java.util.concurrent.locks.Lock l = c.lock(name).asJavaLock();
            boolean got = l.tryLock(1, TimeUnit.SECONDS);
            if (got) {
                l.unlock();
            }
            return got;
        });
        if (c.capabilities().contains(Capability.SEMAPHORE)) {
            outage.assertFails("semaphore tryAcquire(1 s)", bound, () -> c.semaphore(name + "-s", 2)
                    .tryAcquire(1, second));
        }
        if (c.capabilities().contains(Capability.MULTI_LOCK)) {
            outage.assertFails("multiLock tryAcquire(1 s)", bound, () -> c.multiLock(List.of(name + "-a", name + "-b"))
                    .tryAcquire(second));
        }
    }

    /** What the outage phases of the case above find in every failure: where, and no secrets. */
    record Outage(String phase, int port, List<String> secrets, boolean hadConnectionError) {

        /**
         * Asserts that {@code form} fails with {@link LockBackendException} within {@code bound} and
         * does not answer (a lease, an empty Optional, false, a timeout) as if someone held the lock;
         * that the exception names {@code 127.0.0.1:<port>} and no credential; and, where the
         * connection failed rather than fell silent, that it carries a cause.
         */
        void assertFails(String form, Duration bound, java.util.concurrent.Callable<?> attempt) {
            long t0 = System.nanoTime();
            Object answer;
            try {
                answer = attempt.call();
            } catch (LockBackendException e) {
                Duration took = Duration.ofNanos(System.nanoTime() - t0);
                String what = String.format("%s with the server %s: %s", form, phase, e.getMessage());
                System.out.printf("outage: %s after %d ms, cause %s%n", what, took.toMillis(), e.getCause());
                assertThat(took).as(what).isLessThan(bound);
                assertThat(e.getMessage()).as(what).contains("127.0.0.1:" + port);
                List<String> seen = new ArrayList<>();
                collect(e, seen);
                for (String secret : secrets) {
                    assertThat(seen).as(what).noneMatch(m -> m.contains(secret));
                }
                if (hadConnectionError) {
                    assertThat(e.getCause()).as("cause of " + what).isNotNull();
                }
                return;
            } catch (Exception e) {
                throw new AssertionError(
                        form + " with the server " + phase + " threw " + e + ", not LockBackendException", e);
            }
            if (answer instanceof Optional<?> o) {
                o.ifPresent(l -> ((Lease) l).close());
            }
            fail("server %s, %s answered %s instead of failing", phase, form, answer);
        }
    }

    /** The credentials a URI carries: a user info's password, {@code password=} / {@code PASSWORD=} values. */
    private static List<String> secretsIn(String uri) {
        List<String> secrets = new ArrayList<>();
        java.util.regex.Matcher m =
                java.util.regex.Pattern.compile("(?i)password=([^&;]+)").matcher(uri);
        while (m.find()) {
            secrets.add(m.group(1));
        }
        java.util.regex.Matcher info =
                java.util.regex.Pattern.compile("://[^/@:]*:([^@/]+)@").matcher(uri);
        if (info.find()) {
            secrets.add(info.group(1));
        }
        return secrets;
    }

    // ---- mixed lease times

    @Test
    default void mixedLeaseTimes_handOverToAShortLeaseThenCutOff_neverTwoValidHolders() throws Exception {
        LockClient longHolder = client(longLease());
        Lease first = longHolder.lock("mixed").acquire();
        try (ChildJvm waiter = ChildJvm.start(LockWorker.class, List.of("hold-check", uri(shortLease()), "mixed"))) {
            waiter.awaitLine("READY", Timing.scale(Duration.ofSeconds(30)));
            // The child queues behind the long holder; give it time to stand in the server's queue.
            await().atMost(Timing.scale(Duration.ofSeconds(20)))
                    .until(() -> entries("mixed").size() >= 2);
            first.close();
            long handedToken = Long.parseLong(waiter.awaitLine("HOLDING", Timing.scale(Duration.ofSeconds(20)))
                    .split(" ")[1]);
            assertThat(handedToken).isGreaterThan(first.fencingToken());
            // Let the new holder renew at least once on its own, short, lease, then cut it off.
            Thread.sleep(Timing.scale(Duration.ofMillis(1500)).toMillis());
            waiter.pause();
            Optional<Lease> taken;
            try {
                taken = client(shortLease()).lock("mixed").tryAcquire(Timing.scale(crashReleaseBound()));
                assertThat(taken)
                        .as(
                                "granted within the cut-off holder's own short lease (%s), not the long one it was handed",
                                crashReleaseBound())
                        .isPresent();
                assertThat(taken.get().fencingToken()).isGreaterThan(handedToken);
            } finally {
                waiter.resume();
            }
            waiter.send("check");
            assertThat(waiter.awaitLine("VALID", Timing.scale(Duration.ofSeconds(10))))
                    .as("the cut-off holder's lease, once another holder was granted")
                    .isEqualTo("VALID false");
            taken.get().close();
        }
        // Whatever the killed child left behind is gone once its own short lease has run out and the
        // lock was waited for again (SQL purges a lock's expired waiter rows when a waiter enqueues).
        // The leftover's lease running out is the condition here, and nothing outside the server can
        // see it: wait the lease out, wait once behind a holder, then every entry must be gone.
        // Short leases for these two, so that what their own cycle leaves behind (a memcached waiter
        // key whose delete waits for the server's data life to settle) expires within the bound too.
        Thread.sleep(Timing.scale(crashReleaseBound()).toMillis());
        try (Lease again =
                client(shortLease()).lock("mixed").tryAcquire(Duration.ZERO).orElseThrow()) {
            assertThat(client(shortLease()).lock("mixed").tryAcquire(Duration.ofMillis(100)))
                    .isEmpty();
        }
        // Each look is allowed to finish: listing a server's keys may itself take seconds (memcached's
        // LRU crawler answers BUSY while its own background crawl runs), and a look cut short by
        // the deadline would say nothing about what is left.
        long deadline = System.nanoTime()
                + Timing.scale(crashReleaseBound().multipliedBy(2)).toNanos();
        List<String> left = entries("mixed");
        while (!left.isEmpty() && System.nanoTime() - deadline < 0) {
            Thread.sleep(100);
            left = entries("mixed");
        }
        assertThat(left)
                .as("entries left twice the crash-release bound after the last grant")
                .isEmpty();
    }

    // ---- namespaces

    @Test
    default void neighbourNamespaces_sameAndLookalikeNames_fullyIsolated() throws Exception {
        List<String> namespaces = neighbourNamespaces();
        assertThat(namespaces).hasSizeGreaterThanOrEqualTo(2);
        // Short words a key layout uses as segments, alone and joined by the separators a name may hold.
        Set<String> names = new LinkedHashSet<>(List.of("x", "s", "q", "w", "r", "l", "lock", "locks", "sem", "rw"));
        names.addAll(
                List.of("waiters", "l:x", "w:x", "s:x", "q:x", "x:l", "x:w", "x:s", "x:q", "lock:x", "x.s", "x-s"));
        for (String ns : namespaces) {
            for (String part : ns.split("[^A-Za-z0-9]+")) {
                if (!part.isEmpty()) {
                    names.add(part);
                }
            }
        }
        List<LockClient> clients = new ArrayList<>();
        try {
            for (String ns : namespaces) {
                clients.add(LockClient.connect(uriIn(ns, patient())));
            }
            holdEverywhere(namespaces, names, clients);
        } finally {
            clients.forEach(LockClient::close);
        }
    }

    private void holdEverywhere(List<String> namespaces, Set<String> names, List<LockClient> clients)
            throws InterruptedException {
        // Every name, held as a lock in every namespace at once, then as a semaphore and a read-write
        // lock: no namespace sees another's entries, and nothing parses a neighbour's values.
        List<Lease> held = new ArrayList<>();
        for (LockClient c : clients) {
            for (String name : names) {
                held.add(c.lock(name)
                        .tryAcquire(Duration.ZERO)
                        .orElseThrow(
                                () -> new AssertionError("lock '" + name + "' in " + c + " taken by a neighbour")));
            }
        }
        for (LockClient c : clients) {
            if (!c.capabilities().contains(Capability.SEMAPHORE)
                    || !c.capabilities().contains(Capability.READ_WRITE)) {
                continue;
            }
            for (String name : names) {
                held.add(c.semaphore(name + "-p", 1)
                        .tryAcquire(1, Duration.ZERO)
                        .orElseThrow(() -> new AssertionError("semaphore '" + name + "-p' in " + c)));
                held.add(c.readWriteLock(name + "-rw")
                        .writeLock()
                        .tryAcquire(Duration.ZERO)
                        .orElseThrow(() -> new AssertionError("write lock '" + name + "-rw' in " + c)));
            }
        }
        for (Lease l : held) {
            assertThat(l.isValid()).as("%s", l).isTrue();
        }
        // Still exclusive inside each namespace.
        for (String ns : namespaces) {
            try (LockClient other = LockClient.connect(uriIn(ns, patient()))) {
                for (String name : names) {
                    assertThat(other.lock(name).tryAcquire(Duration.ZERO))
                            .as("lock '%s' in %s while held there", name, ns)
                            .isEmpty();
                }
            }
        }
        for (Lease l : held) {
            l.close();
        }
    }

    // ---- parameter extremes

    @Test
    default void durationOptions_atAndBeyondTheirLimits_workOrAreRefusedByName() throws Exception {
        for (String option : durationOptions()) {
            boolean lease = option.equals("leaseTime");
            String min = lease ? "100ms" : "1ms";
            String belowMin = lease ? "99ms" : "0ms";
            String max = "PT" + (lease ? maxLeaseTime().toHours() : 24 * 365) + "H";
            String aboveMax = "PT" + ((lease ? maxLeaseTime().toHours() : 24 * 365) + 1) + "H";
            for (String outside : List.of(belowMin, aboveMax, "-1s")) {
                try (LockClient c = LockClient.connect(uri(option + "=" + outside))) {
                    fail("%s=%s was accepted: %s", option, outside, c);
                } catch (IllegalArgumentException e) {
                    assertThat(e.getMessage()).as("%s=%s", option, outside).contains(option);
                }
            }
            for (String edge : List.of(min, max)) {
                String name = "edge-" + option + "-" + (edge.equals(min) ? "min" : "max");
                LockClient c;
                try {
                    c = LockClient.connect(uri(option + "=" + edge));
                } catch (IllegalArgumentException e) {
                    // Refused for how it combines with another option's default; it must say which.
                    assertThat(e.getMessage()).as("%s=%s", option, edge).contains(option);
                    continue;
                } catch (LockBackendException e) {
                    assertThat(option)
                            .as("only a 1 ms connect timeout may fail to connect: %s", e.getMessage())
                            .isEqualTo("connectTimeout");
                    continue;
                }
                long token;
                try (c) {
                    try (Lease l = c.lock(name)
                            .tryAcquire(Timing.scale(Duration.ofSeconds(10)))
                            .orElseThrow()) {
                        token = l.fencingToken();
                        assertThat(token).isPositive();
                    }
                }
                try (Lease next = client(patient())
                        .lock(name)
                        .tryAcquire(Timing.scale(crashReleaseBound()))
                        .orElseThrow(() -> new AssertionError(option + "=" + edge + " left '" + name + "' held"))) {
                    assertThat(next.fencingToken()).isGreaterThan(token);
                }
            }
        }
    }

    // ---- many held locks

    @Test
    default void manyHeldLocks_noFalseLoss() throws Exception {
        int count = manyHeldLocks();
        // Not reentrant: the leases are taken on a pool's threads and closed on this one.
        LockClient holder = client(LockFixture.options(manyHeldLocksOptions(), "reentrant=false"));
        AtomicInteger lost = new AtomicInteger();
        List<Lease> leases = java.util.Collections.synchronizedList(new ArrayList<>(count));
        String pad = "n".repeat(190);
        ExecutorService pool = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> parts = new ArrayList<>();
            for (int t = 0; t < 8; t++) {
                int from = t;
                parts.add(pool.submit(() -> {
                    for (int i = from; i < count; i += 8) {
                        Lease l = holder.lock(String.format("%s%09d", pad, i))
                                .tryAcquire(Timing.scale(Duration.ofSeconds(30)))
                                .orElseThrow();
                        l.onLost(e -> lost.incrementAndGet());
                        leases.add(l);
                    }
                    return null;
                }));
            }
            for (Future<?> f : parts) {
                f.get(Timing.scale(Duration.ofMinutes(4)).toMillis(), TimeUnit.MILLISECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(leases).hasSize(count);
        // Two renewal intervals (leaseTime 15 s: renewals every 5 s) past the last grant.
        Thread.sleep(Timing.scale(Duration.ofSeconds(11)).toMillis());
        assertThat(lost.get()).as("leases reported lost").isZero();
        assertThat(leases.stream().filter(l -> !l.isValid()).count())
                .as("invalid leases")
                .isZero();
        try (LockClient other = LockClient.connect(uri(patient()))) {
            for (int i = 0; i < count; i += Math.max(1, count / 50)) {
                assertThat(other.lock(String.format("%s%09d", pad, i)).tryAcquire(Duration.ZERO))
                        .as("lock %d while held", i)
                        .isEmpty();
            }
        }
        for (Lease l : leases) {
            l.close();
        }
        assertThat(lost.get()).isZero();
    }

    // ---- credentials

    @Test
    default void credentials_inEveryUriForm_neverInAMessageOrToString() throws Exception {
        String secret = "Sekr3tPw0rd";
        List<String> uris = urisWithSecret(secret);
        assertThat(uris).isNotEmpty();
        for (String uri : uris) {
            List<String> seen = new ArrayList<>();
            try (LockClient c = LockClient.connect(uri)) {
                seen.add(c.toString());
                try (Lease l = c.lock("cred")
                        .tryAcquire(Timing.scale(Duration.ofSeconds(5)))
                        .orElseThrow()) {
                    seen.add(l.toString());
                } catch (RuntimeException e) {
                    collect(e, seen);
                }
                try {
                    c.lock("bad name with spaces");
                } catch (RuntimeException e) {
                    collect(e, seen);
                }
            } catch (RuntimeException e) {
                collect(e, seen);
            }
            assertThat(seen)
                    .as("what %s showed", uri.replace(secret, "<secret>"))
                    .isNotEmpty();
            for (String s : seen) {
                assertThat(s).as("from %s", uri.replace(secret, "<secret>")).doesNotContain(secret);
            }
        }
    }

    private static void collect(Throwable e, List<String> into) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            into.add(String.valueOf(t.getMessage()));
            into.add(t.toString());
            for (Throwable s : t.getSuppressed()) {
                collect(s, into);
            }
        }
    }
}
