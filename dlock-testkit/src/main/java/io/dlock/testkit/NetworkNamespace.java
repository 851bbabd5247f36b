package io.dlock.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Linux network namespace joined to this one by a veth pair, for cutting a process off the way a
 * network does: the process runs inside ({@link #commandPrefix()}), reaches this side's services at
 * {@link #hostAddress()}, and {@link #drop} makes {@code iptables} inside the namespace drop its
 * packets to or from one port. Unlike a proxy that stops forwarding, the process's own TCP stack
 * then sees a silent peer: no ACKs, retransmissions, a send buffer that fills up.
 *
 * <p>Needs root (CAP_NET_ADMIN), {@code ip} (Debian: iproute2) and {@code iptables}; {@link
 * #unavailable()} says what is missing. Each namespace has its own /30 in 10.231.0.0/16 and its own
 * names, and is deleted by {@link #close()} (or at JVM exit if a caller forgot).
 *
 * <p>Thread-safety: safe from any thread; rule changes are serialized on this object.
 */
public final class NetworkNamespace implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(NetworkNamespace.class);
    private static final AtomicInteger SEQ = new AtomicInteger();
    private static final Set<NetworkNamespace> OPEN = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> OPEN.forEach(NetworkNamespace::close), "dlock-netns"));
    }

    /** Which packets {@link #drop} drops, seen from the process inside. */
    public enum Direction {
        /** What the process sends (its requests). */
        OUTGOING,
        /** What it receives (the replies). */
        INCOMING,
        /** Both. */
        BOTH
    }

    private final String name;
    private final String hostLink;
    private final InetAddress hostAddress;
    private boolean guarded;
    private boolean closed;

    private NetworkNamespace(String name, String hostLink, InetAddress hostAddress) {
        this.name = name;
        this.hostLink = hostLink;
        this.hostAddress = hostAddress;
    }

    /**
     * Says why namespaces cannot be made here (not root, a tool missing, the kernel refusing), or
     * empty if they can.
     *
     * <p>Blocking: runs a few short commands (a namespace is made and deleted), under a second.
     * Thread-safety: safe from any thread. On failure: never throws; a failure is the answer.
     *
     * @return the reason, or empty when available
     */
    public static Optional<String> unavailable() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return Optional.of("network namespaces need root");
        }
        for (String tool : new String[] {"ip", "iptables"}) {
            if (!onPath(tool)) {
                return Optional.of(tool + " not found (Debian: apt-get install "
                        + (tool.equals("ip") ? "iproute2" : "iptables") + ")");
            }
        }
        try (NetworkNamespace probe = create()) {
            probe.drop(1, Direction.BOTH);
            probe.pass();
            return Optional.empty();
        } catch (RuntimeException e) {
            return Optional.of("cannot set up a network namespace with iptables: " + e.getMessage());
        }
    }

    /**
     * Makes a namespace with a veth pair to this one, its loopback up, and no rules inside; in this
     * namespace one rule drops packets to the host side's address that do not come through the pair.
     *
     * <p>Blocking: runs about ten short commands. Thread-safety: safe from any thread. On failure:
     * {@link IllegalStateException} with the failing command's output; nothing is left behind.
     *
     * @return the namespace; close it when done
     * @throws IllegalStateException if it cannot be made
     */
    public static NetworkNamespace create() {
        long pid = ProcessHandle.current().pid() % 100_000;
        @Nullable RuntimeException last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            int seq = SEQ.incrementAndGet();
            String base = "dk" + pid + "n" + seq; // interface names are at most 15 characters
            int net = ThreadLocalRandom.current().nextInt(0, 1 << 14); // a /30 in 10.231.0.0/16
            String host = "10.231." + (net >> 6) + "." + ((net & 63) << 2 | 1);
            String inner = "10.231." + (net >> 6) + "." + ((net & 63) << 2 | 2);
            NetworkNamespace ns;
            try {
                ns = new NetworkNamespace(base, base + "h", InetAddress.getByName(host));
            } catch (UnknownHostException e) {
                throw new IllegalStateException(e);
            }
            OPEN.add(ns);
            try {
                run("ip", "netns", "add", ns.name);
                run("ip", "link", "add", ns.hostLink, "type", "veth", "peer", "name", base + "c");
                run("ip", "link", "set", base + "c", "netns", ns.name);
                run("ip", "addr", "add", host + "/30", "dev", ns.hostLink);
                run("ip", "link", "set", ns.hostLink, "up");
                ns.inside("ip", "addr", "add", inner + "/30", "dev", base + "c");
                ns.inside("ip", "link", "set", base + "c", "up");
                ns.inside("ip", "link", "set", "lo", "up");
                run(ns.guard("-I"));
                ns.guarded = true;
                return ns;
            } catch (RuntimeException e) {
                ns.close();
                last = e; // a name or subnet taken by another run: try another
            }
        }
        throw new IllegalStateException("cannot make a network namespace", last);
    }

    /**
     * Returns this side's address of the veth pair: a process inside reaches services bound to it.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return the address, in 10.231.0.0/16
     */
    public InetAddress hostAddress() {
        return hostAddress;
    }

    /**
     * Returns the words that run a command inside the namespace: {@code ip netns exec <name>}
     * (which execs the command, so its pid is the command's).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: never fails.
     *
     * @return the prefix
     */
    public List<String> commandPrefix() {
        return List.of("ip", "netns", "exec", name);
    }

    /**
     * Drops, inside the namespace, the TCP packets to (outgoing) or from (incoming) {@code port}
     * at {@link #hostAddress()}; other traffic passes. Replaces the rules of an earlier drop.
     *
     * <p>Blocking: runs up to four short commands. Thread-safety: safe from any thread. On failure:
     * {@link IllegalArgumentException} for a port outside 1..65535 (no rule changed); {@link
     * IllegalStateException} with iptables' output.
     *
     * @param port the port on this side whose traffic to drop
     * @param direction which packets
     * @throws IllegalArgumentException if {@code port} is not a port
     * @throws IllegalStateException if iptables fails
     */
    public synchronized void drop(int port, Direction direction) {
        if (port < 1 || port > 65_535) {
            throw new IllegalArgumentException("port must be 1 to 65535, was " + port);
        }
        pass();
        String host = hostAddress.getHostAddress();
        String p = Integer.toString(port);
        if (direction != Direction.INCOMING) {
            inside("iptables", "-w", "-A", "OUTPUT", "-p", "tcp", "-d", host, "--dport", p, "-j", "DROP");
        }
        if (direction != Direction.OUTGOING) {
            inside("iptables", "-w", "-A", "INPUT", "-p", "tcp", "-s", host, "--sport", p, "-j", "DROP");
        }
    }

    /**
     * Removes every rule: traffic passes again (connections that timed out meanwhile stay dead).
     *
     * <p>Blocking: runs two short commands. Thread-safety: safe from any thread. On failure:
     * {@link IllegalStateException} with iptables' output.
     */
    public synchronized void pass() {
        inside("iptables", "-w", "-F", "OUTPUT");
        inside("iptables", "-w", "-F", "INPUT");
    }

    /**
     * Deletes the veth pair and the namespace. Processes still inside lose their network.
     *
     * <p>Blocking: runs two short commands. Thread-safety: safe from any thread; idempotent. On
     * failure: never throws; problems are logged.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        OPEN.remove(this);
        if (guarded) {
            try {
                run(guard("-D"));
            } catch (RuntimeException e) {
                LOG.warn("{}: could not remove its INPUT rule: {}", this, e.getMessage());
            }
        }
        for (String[] command : new String[][] {{"ip", "link", "del", hostLink}, {"ip", "netns", "del", name}}) {
            try {
                run(command);
            } catch (RuntimeException e) {
                LOG.debug("{}: {}", this, e.getMessage()); // already gone, or never made
            }
        }
    }

    /**
     * The rule that keeps {@link #hostAddress()} for the namespace alone: in this namespace's INPUT
     * chain, packets to it that did not come through the veth pair are dropped, so what listens
     * there (a proxy) is no more reachable than a 127.0.0.1 port, whatever routes the machine has.
     */
    private String[] guard(String action) {
        return new String[] {
            "iptables", "-w", action, "INPUT", "-d", hostAddress.getHostAddress(), "!", "-i", hostLink, "-j", "DROP"
        };
    }

    String name() {
        return name;
    }

    @Override
    public String toString() {
        return "NetworkNamespace[" + name + ", host side " + hostAddress.getHostAddress() + "]";
    }

    private void inside(String... command) {
        List<String> all = new ArrayList<>(commandPrefix());
        all.addAll(List.of(command));
        run(all.toArray(new String[0]));
    }

    private static void run(String... command) {
        command[0] = tool(command[0]);
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException(String.join(" ", command) + ": did not finish in 10 s");
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", command) + ": exit " + p.exitValue() + ": " + out);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + command[0], e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted running " + String.join(" ", command), e);
        }
    }

    private static boolean onPath(String tool) {
        try {
            tool(tool);
            return true;
        } catch (IllegalStateException e) {
            return false;
        }
    }

    /** The full path of {@code ip} or {@code iptables}: root's PATH may lack the sbin directories. */
    private static String tool(String name) {
        return name.startsWith("/")
                ? name
                : ServerProcess.binary(name, null, null, name.equals("ip") ? "iproute2" : name, "/usr/sbin", "/sbin");
    }
}
