package io.dlock.cli.internal.torture;

import io.dlock.cli.internal.DurationConverter;
import io.dlock.testkit.ZooKeeperEnsemble;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import org.jspecify.annotations.Nullable;

/**
 * A 3-server ZooKeeper ensemble started by the torture ({@code --uri embedded:zookeeper-ensemble}),
 * each server in its own JVM ({@link ZooKeeperEnsemble}).
 *
 * <p>Each worker's fault proxy fronts one member, in turn, and its URI lists that proxy and the
 * other members directly: a {@code partition} cuts the worker off from its member, and the client
 * has to move to another one (or lose its leases in time). A {@code server-restart} kills the
 * current leader with SIGKILL, keeps it down, and starts it again: the other two elect a new
 * leader meanwhile, and the clients that were connected to the old one move.
 *
 * <p>Thread-safety: the controller thread only ({@link #serverAddress()} and {@link #clientUri}
 * are called in pairs, one worker at a time).
 */
final class ZooKeeperEnsembleTarget implements BackendTarget {

    private final ZooKeeperEnsemble ensemble;
    private int nextMember; // the member the next worker's proxy fronts
    private int fronted; // the member the last serverAddress() returned

    private ZooKeeperEnsembleTarget(ZooKeeperEnsemble ensemble) {
        this.ensemble = ensemble;
    }

    static ZooKeeperEnsembleTarget embedded() {
        return new ZooKeeperEnsembleTarget(
                ZooKeeperEnsemble.start(3, serverJvmOptions(System.getProperty(TortureRun.SERVER_LOG_LEVEL))));
    }

    /**
     * The servers' JVM options for {@link TortureRun#SERVER_LOG_LEVEL}: ZooKeeper's own log at that
     * level (the CLI's default is {@code error}), with the wall clock, to line up the servers'
     * elections and session expiries with the faults and the workers' logs.
     */
    static List<String> serverJvmOptions(@Nullable String level) {
        if (level == null || level.isBlank()) {
            return List.of();
        }
        return List.of(
                "-Dorg.slf4j.simpleLogger.log.org.apache.zookeeper=" + level.trim(),
                "-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS");
    }

    /**
     * The latest start of a member's term as leader or follower: a leader's takeover restarts
     * every session's timeout, a follower's sync those of the sessions created while it was away.
     */
    @Override
    public OptionalLong sessionsRestartedAt() {
        return ensemble.latestServingSince();
    }

    @Override
    public Map<String, List<String>> serverLogs() {
        Map<String, List<String>> logs = new LinkedHashMap<>();
        for (int i = 0; i < ensemble.size(); i++) {
            logs.put("server." + (i + 1), ensemble.member(i).log());
        }
        return logs;
    }

    @Override
    public String backend() {
        return "zookeeper";
    }

    @Override
    public String description() {
        return "ZooKeeper ensemble (3 servers, child JVMs on " + ensemble.connectString() + ")";
    }

    @Override
    public InetSocketAddress serverAddress() {
        fronted = nextMember;
        nextMember = (nextMember + 1) % ensemble.size();
        return new InetSocketAddress("127.0.0.1", ensemble.member(fronted).port());
    }

    @Override
    public String clientUri(String proxy, String namespace, Duration expiry) {
        StringBuilder hosts = new StringBuilder(proxy);
        for (int i = 0; i < ensemble.size(); i++) {
            if (i != fronted) {
                hosts.append(',').append(ensemble.member(i).connectString());
            }
        }
        return "zookeeper://" + hosts + "/" + namespace + "?sessionTimeout=" + DurationConverter.toParameter(expiry);
    }

    @Override
    public boolean canRestartServer() {
        return true;
    }

    /** The client also connects to servers the proxy does not front. */
    @Override
    public boolean canUseNetworkNamespaces() {
        return false;
    }

    /** Kills the current leader (the ensemble elects another), keeps it down, starts it again. */
    @Override
    public void restartServer(Duration downtime) {
        int leader = ensemble.awaitLeader(Duration.ofSeconds(30));
        ZooKeeperEnsemble.Member m = ensemble.member(leader);
        BackendTarget.bounce(m::kill, m::restart, downtime);
    }

    @Override
    public List<String> leftovers(String namespace) {
        return servingMember().leftovers(namespace);
    }

    @Override
    public List<String> describeQueue(String namespace) {
        try {
            return servingMember().describeQueue(namespace);
        } catch (RuntimeException e) {
            List<String> lines = new ArrayList<>();
            lines.add("cannot read the queue: " + e);
            return lines;
        }
    }

    /** A target on one member that serves now, to read the queue directly. */
    private ZooKeeperTarget servingMember() {
        int leader = ensemble.awaitLeader(Duration.ofSeconds(30));
        return ZooKeeperTarget.external("zookeeper://" + ensemble.member(leader).connectString());
    }

    @Override
    public void close() {
        ensemble.close();
    }
}
