package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * A process inside a {@link NetworkNamespace} reaches a server on the host side until {@code
 * drop}, in either direction, makes its connection attempt go unanswered, and again after {@code
 * pass}; {@code close} removes the namespace. Needs root, ip and iptables (run-tests installs them).
 */
class NetworkNamespaceIT {

    @Test
    void dropEitherWay_silencesThePeer_passLetsItThroughAgain_closeRemovesTheNamespace() throws Exception {
        assertThat(NetworkNamespace.unavailable())
                .as("network namespaces on this machine")
                .isEmpty();
        String name;
        try (NetworkNamespace ns = NetworkNamespace.create();
                ServerSocket server = new ServerSocket(0, 50, ns.hostAddress())) {
            name = ns.name();
            Thread acceptor = new Thread(() -> acceptAll(server), "netns-it-accept");
            acceptor.setDaemon(true);
            acceptor.start();
            assertThat(ip("netns", "list")).contains(name);

            assertThat(connectFromInside(ns, server.getLocalPort()))
                    .as("before any drop")
                    .isZero();
            assertThat(connectFromHere(ns, server.getLocalPort()))
                    .as("the host side's address is for the namespace only, like a loopback port")
                    .isEqualTo(124);
            assertThatThrownBy(() -> ns.drop(0, NetworkNamespace.Direction.BOTH))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("port");
            assertThat(connectFromInside(ns, server.getLocalPort()))
                    .as("a refused drop changed nothing")
                    .isZero();

            ns.drop(server.getLocalPort(), NetworkNamespace.Direction.OUTGOING);
            assertThat(connectFromInside(ns, server.getLocalPort()))
                    .as("the SYN dropped: timeout's exit status")
                    .isEqualTo(124);

            ns.drop(server.getLocalPort(), NetworkNamespace.Direction.INCOMING);
            assertThat(connectFromInside(ns, server.getLocalPort()))
                    .as("the SYN-ACK dropped")
                    .isEqualTo(124);

            ns.pass();
            assertThat(connectFromInside(ns, server.getLocalPort()))
                    .as("after pass")
                    .isZero();
        }
        assertThat(ip("netns", "list")).doesNotContain(name);
        assertThat(iptables("-S", "INPUT")).as("the guard rule removed").doesNotContain(name + "h");
    }

    /** Connects from this namespace, not through the pair, giving up after 2 s. */
    private static int connectFromHere(NetworkNamespace ns, int port) throws Exception {
        Process p = new ProcessBuilder(
                        "timeout",
                        "2",
                        "bash",
                        "-c",
                        "exec 3<>/dev/tcp/" + ns.hostAddress().getHostAddress() + "/" + port)
                .redirectErrorStream(true)
                .start();
        p.getInputStream().readAllBytes();
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
        return p.exitValue();
    }

    private static String iptables(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("/usr/sbin/iptables"));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
        return out;
    }

    /** Connects with bash's /dev/tcp from inside, giving up after 2 s; returns the exit status. */
    private static int connectFromInside(NetworkNamespace ns, int port) throws Exception {
        List<String> command = new ArrayList<>(ns.commandPrefix());
        command.addAll(List.of(
                "timeout",
                "2",
                "bash",
                "-c",
                "exec 3<>/dev/tcp/" + ns.hostAddress().getHostAddress() + "/" + port));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        p.getInputStream().readAllBytes();
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
        return p.exitValue();
    }

    private static String ip(String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("/usr/sbin/ip"));
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
        return out;
    }

    private static void acceptAll(ServerSocket server) {
        try {
            while (true) {
                Socket s = server.accept();
                s.close();
            }
        } catch (IOException closed) {
            // the test closed the server
        }
    }
}
