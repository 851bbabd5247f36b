package io.dlock.testkit;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * An etcd cluster of several {@link EtcdServer} members on loopback, each with its own client and
 * peer port and data directory, for tests that kill a member (the leader) while locks are held.
 *
 * <p>Thread-safety: safe from any thread; each member serializes its own lifecycle.
 */
public final class EtcdCluster implements AutoCloseable {

    private final List<EtcdServer> members;

    private EtcdCluster(List<EtcdServer> members) {
        this.members = List.copyOf(members);
    }

    /**
     * Starts {@code size} members that form one cluster.
     *
     * <p>Blocking: until every member reports healthy (the cluster has a leader), at most {@link
     * EtcdServer#START_TIMEOUT} scaled by {@link Timing} per member. Thread-safety: safe from any
     * thread. On failure: {@link IllegalStateException} with the failing member's log tail; every
     * member started is stopped again.
     *
     * @param size the number of members, 1 to 7
     * @return the running cluster
     * @throws IllegalArgumentException if {@code size} is out of range
     * @throws IllegalStateException if it cannot be started
     */
    public static EtcdCluster start(int size) {
        if (size < 1 || size > 7) {
            throw new IllegalArgumentException("size must be in 1..7, was " + size);
        }
        String binary = EtcdServer.binary();
        int[] clientPorts = new int[size];
        int[] peerPorts = new int[size];
        List<String> initial = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            clientPorts[i] = FreePorts.loopback();
            peerPorts[i] = FreePorts.loopback();
            initial.add("m" + i + "=http://127.0.0.1:" + peerPorts[i]);
        }
        String initialCluster = String.join(",", initial);
        List<EtcdServer> members = new ArrayList<>();
        try {
            for (int i = 0; i < size; i++) {
                Path dir = Reaper.createTempDirectory("dlock-etcd-m" + i + "-");
                EtcdServer member = new EtcdServer(
                        "m" + i,
                        clientPorts[i],
                        peerPorts[i],
                        dir,
                        initialCluster,
                        "dlock-cluster-" + clientPorts[0],
                        false);
                members.add(member);
                member.launch(binary);
            }
            for (EtcdServer member : members) {
                awaitHealthy(member);
            }
        } catch (RuntimeException e) {
            members.forEach(EtcdServer::close);
            throw e;
        }
        return new EtcdCluster(members);
    }

    private static void awaitHealthy(EtcdServer member) {
        long deadline =
                System.nanoTime() + Timing.scale(EtcdServer.START_TIMEOUT).toNanos();
        while (!member.isHealthy()) {
            if (!member.isAlive() || System.nanoTime() - deadline > 0) {
                throw new IllegalStateException(member
                        + (member.isAlive() ? " did not report healthy in time" : " exited")
                        + EtcdServer.tail(member.logFile()));
            }
            try {
                Thread.sleep(50); // polls readiness; etcd offers no start-up callback
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while starting " + member, e);
            }
        }
    }

    /**
     * Returns the members, in start order.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return an unmodifiable list
     */
    public List<EtcdServer> members() {
        return members;
    }

    /**
     * Returns {@code etcd://h:p,h:p,h:p/<namespace>} naming every member.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: {@link
     * IllegalArgumentException} for a blank namespace or one with whitespace.
     *
     * @param namespace the key prefix for dlock's keys; one leading {@code '/'} is ignored
     * @return the URI as a string
     * @throws IllegalArgumentException if {@code namespace} is blank or contains whitespace
     */
    public String uri(String namespace) {
        return "etcd://" + members.stream().map(EtcdServer::connectString).collect(Collectors.joining(",")) + "/"
                + TestServer.checkNamespace(namespace);
    }

    /**
     * Restarts a killed member on its ports and data, and waits until the cluster is healthy.
     *
     * <p>Blocking: until the member reports healthy. Thread-safety: safe from any thread. On
     * failure: {@link IllegalStateException} with its log tail.
     *
     * @param member one of {@link #members()}
     * @throws IllegalStateException if it does not rejoin in time
     */
    public void restart(EtcdServer member) {
        if (!members.contains(member)) {
            throw new IllegalArgumentException(member + " is not a member of this cluster");
        }
        member.kill();
        member.launch(EtcdServer.binary());
        awaitHealthy(member);
    }

    /**
     * Waits until every live member reports healthy (a leader is elected).
     *
     * <p>Blocking: up to {@code timeout}. Thread-safety: safe from any thread. On failure: {@link
     * IllegalStateException} if not healthy in time.
     *
     * @param timeout how long to wait
     */
    public void awaitHealthy(Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        for (EtcdServer m : members) {
            while (m.isAlive() && !m.isHealthy()) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException(m + " not healthy within " + timeout);
                }
                try {
                    Thread.sleep(50); // polls the members' health endpoints
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted", e);
                }
            }
        }
    }

    /**
     * Stops every member and deletes their directories.
     *
     * <p>Blocking: until every process has exited. Thread-safety: safe from any thread; idempotent.
     * On failure: never throws.
     */
    @Override
    public void close() {
        members.forEach(EtcdServer::close);
    }

    @Override
    public String toString() {
        return "EtcdCluster" + members;
    }
}
