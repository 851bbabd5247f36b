package io.dlock.cli.internal.torture;

import io.dlock.cli.internal.DurationConverter;
import io.dlock.testkit.RedisServer;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * Redis with Sentinel, started by the torture ({@code --uri embedded:redis-sentinel}, or {@code
 * embedded:redis-sentinel-wait} for clients with {@code waitReplicas=1}): a master with AOF
 * persistence, one replica and one Sentinel (quorum 1, master down after 1 s). Clients find the
 * master through the Sentinel, as applications do.
 *
 * <p>A {@code server-restart} is a failover: it kills the current master with SIGKILL, keeps it
 * down, starts it again (the Sentinel makes it a replica of the promoted one if the failover has
 * happened meanwhile) and waits until the pair is whole again (a master, its replica in sync), so
 * that the next failover has a replica to promote. Replication is asynchronous: a grant the
 * replica had not received when the master died is gone on the new master, and only the fencing
 * token stops the second holder that follows; the summary's "stale writes refused" counts those.
 * With {@code waitReplicas=1} every grant waits for the replica's acknowledgement first.
 *
 * <p>Each worker's fault proxy fronts the Sentinel, not the master (the client connects to the
 * master the Sentinel names), so a proxy cannot cut a worker off from the data: this target does
 * not take {@code partition}.
 *
 * <p>Thread-safety: the controller thread only.
 */
final class RedisSentinelTarget implements BackendTarget {
    private static final String MASTER = "torture";
    private static final Duration SETTLE = Duration.ofSeconds(30);

    private final RedisServer first;
    private final RedisServer second;
    private final RedisServer sentinel;
    private final int waitReplicas;

    private RedisSentinelTarget(RedisServer first, RedisServer second, RedisServer sentinel, int waitReplicas) {
        this.first = first;
        this.second = second;
        this.sentinel = sentinel;
        this.waitReplicas = waitReplicas;
    }

    static RedisSentinelTarget embedded(int waitReplicas) {
        RedisServer master = RedisServer.start();
        RedisServer replica = null;
        RedisServer sentinel = null;
        try {
            replica = RedisServer.builder().replicaOf(master).start();
            sentinel = RedisServer.builder()
                    .sentinel()
                    .config("sentinel monitor " + MASTER + " 127.0.0.1 " + master.port() + " 1")
                    .config("sentinel down-after-milliseconds " + MASTER + " 1000")
                    .config("sentinel failover-timeout " + MASTER + " 3000")
                    .start();
            RedisSentinelTarget target = new RedisSentinelTarget(master, replica, sentinel, waitReplicas);
            target.awaitWhole();
            return target;
        } catch (RuntimeException e) {
            for (RedisServer s : new @Nullable RedisServer[] {sentinel, replica, master}) {
                if (s != null) {
                    s.close();
                }
            }
            throw e;
        }
    }

    @Override
    public String backend() {
        return "redis";
    }

    @Override
    public String description() {
        return "Redis with Sentinel (master and replica with AOF on 127.0.0.1:" + first.port() + " and :"
                + second.port() + ", Sentinel on :" + sentinel.port() + ", clients waitReplicas=" + waitReplicas
                + ")";
    }

    @Override
    public InetSocketAddress serverAddress() {
        return new InetSocketAddress("127.0.0.1", sentinel.port());
    }

    @Override
    public String clientUri(String proxy, String namespace, Duration expiry) {
        master().markFreshPrefix(namespace);
        return "redis-sentinel://" + proxy + "?master=" + MASTER + "&keyPrefix=" + namespace + "&leaseTime="
                + DurationConverter.toParameter(expiry) + (waitReplicas > 0 ? "&waitReplicas=" + waitReplicas : "");
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

    @Override
    public boolean canPartition() {
        return false;
    }

    /** Kills the current master, keeps it down, starts it again and waits for a whole pair. */
    @Override
    public void restartServer(Duration downtime) {
        RedisServer master = master();
        BackendTarget.bounce(
                master::kill,
                () -> {
                    master.restart();
                    awaitWhole();
                },
                downtime);
    }

    @Override
    public List<String> leftovers(String namespace) {
        return RedisTarget.leftovers(master(), namespace);
    }

    @Override
    public List<String> describeQueue(String namespace) {
        return RedisTarget.describeQueue(master(), namespace);
    }

    @Override
    public void close() {
        sentinel.close();
        second.close();
        first.close();
    }

    /** The data node the Sentinel names as master now. */
    private RedisServer master() {
        Object addr = sentinel.command("SENTINEL", "get-master-addr-by-name", MASTER);
        String port = addr instanceof List<?> l && l.size() == 2 ? String.valueOf(l.get(1)) : "";
        if (port.equals(Integer.toString(first.port()))) {
            return first;
        }
        if (port.equals(Integer.toString(second.port()))) {
            return second;
        }
        throw new IllegalStateException("the Sentinel names no known master: " + addr);
    }

    /**
     * Waits until the Sentinel's master says it is one, with its replica's link up and that replica
     * known to the Sentinel: the state a production pair is in long before a failover.
     */
    private void awaitWhole() {
        long deadline = System.nanoTime() + SETTLE.toNanos();
        String last = "";
        while (System.nanoTime() - deadline < 0) {
            try {
                RedisServer master = master();
                RedisServer replica = master == first ? second : first;
                String mInfo = String.valueOf(master.command("INFO", "replication"));
                String rInfo = String.valueOf(replica.command("INFO", "replication"));
                String known = String.valueOf(sentinel.command("SENTINEL", "replicas", MASTER));
                last = "master :" + master.port() + " "
                        + mInfo.lines().filter(l -> l.startsWith("role:")).findFirst() + ", replica "
                        + rInfo.lines()
                                .filter(l -> l.startsWith("master_link_status:"))
                                .findFirst();
                if (mInfo.contains("role:master")
                        && mInfo.contains("connected_slaves:1")
                        && rInfo.contains("master_port:" + master.port())
                        && rInfo.contains("master_link_status:up")
                        && known.contains(Integer.toString(replica.port()))
                        && !known.contains("s_down")) {
                    return;
                }
            } catch (RuntimeException notYet) {
                last = notYet.getMessage();
            }
            sleep(100); // polls the servers' replication state; Redis has no callback for it
        }
        throw new IllegalStateException("Redis Sentinel pair not whole within " + SETTLE + ": " + last);
    }

    private static void sleep(long ms) {
        try {
            TimeUnit.MILLISECONDS.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the Sentinel pair", e);
        }
    }
}
