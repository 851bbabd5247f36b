package io.dlock.cli.internal.torture;

/**
 * How {@code partition} cuts a worker off from the server.
 *
 * <p>Thread-safety: immutable.
 */
public enum Network {
    /** The worker's fault proxy stops forwarding; the worker's TCP connection itself stays healthy. */
    PROXY,
    /**
     * The worker runs in a network namespace of its own and {@code iptables} there drops its
     * packets to or from the server's proxy: its TCP stack sees a silent peer. Needs root.
     */
    IPTABLES,
    /** {@link #IPTABLES} where the machine and the target allow it, else {@link #PROXY}. */
    AUTO
}
