package io.dlock.cli.internal.torture;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * One backend under torture: the server(s) the run talks to, how a client reaches them through a
 * fault proxy, the server faults the run may inject, and what dlock left behind. A backend joins
 * {@code dlock torture} with one class implementing this and one line in {@link BackendTargets}.
 *
 * <p>Thread-safety: implementations are called from the torture's controller thread only.
 */
public interface BackendTarget extends AutoCloseable {

    /**
     * Returns the backend's name, as in the summary ({@code zookeeper}, {@code redis}).
     *
     * @return the name
     */
    String backend();

    /**
     * Describes the server for the output, for example {@code ZooKeeper in a child JVM on
     * 127.0.0.1:40123}.
     *
     * @return the description
     */
    String description();

    /**
     * Returns the address a worker's fault proxy forwards to.
     *
     * @return the server's address
     */
    InetSocketAddress serverAddress();

    /**
     * Returns the dlock URI a worker connects with, reaching the server through {@code proxy}.
     *
     * @param proxy the proxy's {@code host:port}
     * @param namespace where this run keeps its locks (a path or key prefix)
     * @param expiry the session timeout (ZooKeeper) or lease time (lease-based backends): how long a
     *     dead or cut-off holder keeps the lock
     * @return the URI
     */
    String clientUri(String proxy, String namespace, Duration expiry);

    /**
     * Returns whether this target can kill its server and start it again on the same data.
     *
     * @return true if {@link #restartServer(Duration)} works
     */
    boolean canRestartServer();

    /**
     * Returns whether a worker's fault proxy carries its lock traffic, so that {@code partition}
     * cuts the worker off (false where the proxy fronts only a discovery service).
     *
     * @return true unless the target says otherwise
     */
    default boolean canPartition() {
        return true;
    }

    /**
     * Returns whether a server fault can make the backend grant a lock that is still held (a
     * failover to a replica the grant had not reached): then the store's refusal of a lease dlock
     * still calls valid is the figure the run measures, not a failure. Stale writes accepted and
     * lost updates still fail the run.
     *
     * @return false unless the target says otherwise
     */
    default boolean failoverMayGrantTwice() {
        return false;
    }

    /**
     * Returns whether a worker reaches everything through its proxy, so that it can run in a
     * network namespace of its own (false where the client also talks to servers directly).
     *
     * @return true unless the target says otherwise
     */
    default boolean canUseNetworkNamespaces() {
        return true;
    }

    /**
     * Kills the server with SIGKILL, leaves it down for {@code downtime}, and starts it again on
     * the same port and data.
     *
     * <p>Blocking: for {@code downtime} plus until the server serves again. Thread-safety:
     * controller thread. On failure: {@link IllegalStateException} if it does not serve again in
     * time, or {@link UnsupportedOperationException} if {@link #canRestartServer()} is false.
     *
     * @param downtime how long the server stays down before the restart begins
     * @throws IllegalStateException if the restart fails
     */
    void restartServer(Duration downtime);

    /**
     * Kills a server, keeps it down for {@code downtime}, then restarts it; the restart also runs
     * after an interrupt, so the server is never left down. For {@link #restartServer}.
     *
     * <p>Blocking: for {@code downtime} plus the restart. Thread-safety: controller thread. On
     * failure: whatever {@code restart} throws; {@link IllegalStateException} if interrupted.
     *
     * @param kill stops the server at once (SIGKILL)
     * @param restart starts it again on the same port and waits until it serves
     * @param downtime how long it stays down
     */
    static void bounce(Runnable kill, Runnable restart, Duration downtime) {
        kill.run();
        try {
            Thread.sleep(downtime.toMillis()); // the fault itself: the server is down this long
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the server was down", e);
        } finally {
            restart.run();
        }
    }

    /**
     * Lists the queue entries (znodes, keys, rows) dlock has left under {@code namespace}, reading
     * the server directly (not through a proxy).
     *
     * <p>Blocking: one or a few round trips, bounded by a few seconds. Thread-safety: controller
     * thread. On failure: {@link IllegalStateException} if the server cannot be read.
     *
     * @param namespace the run's namespace
     * @return the entries' paths or keys, empty when clean
     * @throws IllegalStateException if the server cannot be read
     */
    List<String> leftovers(String namespace);

    /**
     * Describes the queue entries under {@code namespace} with whatever the server knows about
     * their owners, for a diagnosis when the lock stopped moving.
     *
     * <p>Blocking: a few round trips, bounded by a few seconds. Thread-safety: controller thread.
     * On failure: never throws; the text says what could not be read.
     *
     * @param namespace the run's namespace
     * @return one line per entry
     */
    List<String> describeQueue(String namespace);

    /**
     * Returns when the servers last may have given sessions a new timeout, if the target can tell:
     * in a ZooKeeper ensemble, when a leader took over (every session) or a follower joined it (the
     * sessions created while it was away), so a session whose client died just before expires a
     * full session timeout after that at the earliest.
     *
     * <p>Blocking: a few round trips, bounded by a few seconds. Thread-safety: controller thread.
     * On failure: never throws; empty when it cannot be read.
     *
     * @return a {@link System#nanoTime()} value, or empty (by default: the target cannot tell)
     */
    default OptionalLong sessionsRestartedAt() {
        return OptionalLong.empty();
    }

    /**
     * Returns the output of every server process this target started, per server, oldest line
     * first (a restarted server's earlier processes included), for the worker log of a run.
     *
     * <p>Blocking: never. Thread-safety: controller thread. On failure: never throws.
     *
     * @return the lines per server name; empty unless the target keeps them
     */
    default Map<String, List<String>> serverLogs() {
        return Map.of();
    }

    /**
     * Stops whatever this target started; leaves an external server alone.
     *
     * <p>Blocking: until stopped. Thread-safety: controller thread; idempotent. On failure: never
     * throws.
     */
    @Override
    void close();
}
