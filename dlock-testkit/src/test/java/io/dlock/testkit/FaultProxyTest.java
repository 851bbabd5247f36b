package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.dlock.testkit.FaultProxy.Direction;
import io.dlock.testkit.FaultProxy.Mode;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The fault proxy in front of a plain echo server on loopback. */
class FaultProxyTest {

    private EchoServer echo;
    private FaultProxy proxy;
    private final List<Socket> sockets = new ArrayList<>();

    @BeforeEach
    void start() throws IOException {
        echo = new EchoServer();
        proxy = FaultProxy.start(echo.port());
    }

    @AfterEach
    void stop() throws IOException {
        for (Socket s : sockets) {
            s.close();
        }
        proxy.close();
        echo.close();
    }

    @Test
    void pass_default_echoesThroughTheProxy() throws IOException {
        Socket s = connect();
        send(s, "hello");
        assertThat(receive(s, 5)).isEqualTo("hello");
        assertThat(proxy.connectString()).isEqualTo("127.0.0.1:" + proxy.port());
        assertThat(proxy.openConnections()).isEqualTo(1);
        await().atMost(Duration.ofSeconds(5)).until(() -> proxy.forwardedBytes() == 10);
        assertThat(proxy.rule(Direction.UPSTREAM).mode()).isEqualTo(Mode.PASS);
    }

    @Test
    void latency_upstream_delaysEachRoundTripByAtLeastTheDelay() throws IOException {
        Socket s = connect();
        send(s, "warm");
        receive(s, 4);
        proxy.latency(Direction.UPSTREAM, Duration.ofMillis(300));
        long start = System.nanoTime();
        send(s, "slow");
        assertThat(receive(s, 4)).isEqualTo("slow");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(300));
        assertThat(proxy.rule(Direction.UPSTREAM)).isEqualTo(new FaultProxy.Rule(Mode.LATENCY, Duration.ofMillis(300)));
        assertThat(proxy.rule(Direction.DOWNSTREAM).mode()).isEqualTo(Mode.PASS);
    }

    @Test
    void blackhole_both_dropsSilentlyKeepsTheConnectionAndNewConnectionsWorkAfterPass() throws IOException {
        Socket s = connect();
        send(s, "a");
        assertThat(receive(s, 1)).isEqualTo("a");
        proxy.blackhole(Direction.BOTH);
        send(s, "lost");
        s.setSoTimeout(300);
        assertThatThrownBy(() -> s.getInputStream().read()).isInstanceOf(SocketTimeoutException.class);
        assertThat(echo.received()).isEqualTo(1); // never reached the server
        assertThat(proxy.droppedBytes()).isEqualTo(4);
        // A new connection is accepted, and it is blackholed too.
        Socket other = connect();
        send(other, "x");
        other.setSoTimeout(200);
        assertThatThrownBy(() -> other.getInputStream().read()).isInstanceOf(SocketTimeoutException.class);

        proxy.pass();
        // The connection that lost bytes stays silent (its stream has a hole), but stays open.
        send(s, "b");
        s.setSoTimeout(300);
        assertThatThrownBy(() -> s.getInputStream().read()).isInstanceOf(SocketTimeoutException.class);
        assertThat(s.isClosed()).isFalse();
        Socket fresh = connect();
        send(fresh, "c");
        assertThat(receive(fresh, 1)).isEqualTo("c");
    }

    @Test
    void blackhole_withoutTraffic_connectionResumesAfterPass() throws IOException {
        Socket s = connect();
        proxy.blackhole(Direction.BOTH);
        proxy.pass(); // nothing was dropped: the stream is intact
        send(s, "ok");
        assertThat(receive(s, 2)).isEqualTo("ok");
    }

    @Test
    void blackhole_downstream_requestReachesServerButReplyIsLost() throws IOException {
        Socket s = connect();
        proxy.blackhole(Direction.DOWNSTREAM);
        send(s, "create");
        await().atMost(Duration.ofSeconds(5)).until(() -> echo.received() == 6);
        s.setSoTimeout(300);
        assertThatThrownBy(() -> s.getInputStream().read()).isInstanceOf(SocketTimeoutException.class);
        assertThat(proxy.rule(Direction.UPSTREAM).mode()).isEqualTo(Mode.PASS);
        assertThat(proxy.rule(Direction.DOWNSTREAM).mode()).isEqualTo(Mode.BLACKHOLE);
    }

    @Test
    void resetConnections_open_clientSeesResetAndNewConnectionsWork() throws IOException {
        Socket s = connect();
        send(s, "a");
        receive(s, 1);
        assertThat(proxy.resetConnections()).isEqualTo(1);
        assertThatThrownBy(() -> {
                    for (int i = 0; i < 10; i++) { // the first write may still land in the send buffer
                        send(s, "more");
                        if (s.getInputStream().read() < 0) {
                            throw new SocketException("closed");
                        }
                    }
                })
                .isInstanceOf(IOException.class);
        await().atMost(Duration.ofSeconds(5)).until(() -> proxy.openConnections() == 0);
        Socket again = connect();
        send(again, "ok");
        assertThat(receive(again, 2)).isEqualTo("ok");
    }

    @Test
    void connect_targetDown_clientConnectionEndsAtOnce() throws IOException {
        // A bound socket that does not listen: its port refuses connections and nobody can take it.
        try (Socket reserved = new Socket()) {
            reserved.bind(new InetSocketAddress(FreePorts.loopbackAddress(), 0));
            try (FaultProxy down = FaultProxy.start(reserved.getLocalPort())) {
                assertEndsAtOnce(down.port());
                assertThat(down.openConnections()).isZero();
            }
        }
    }

    @Test
    void refuse_resetsNewConnectionsAtOnce_keepsOpenOnes_andPassAcceptsAgain() throws IOException {
        Socket open = connect();
        send(open, "a");
        receive(open, 1);
        proxy.refuse();
        assertEndsAtOnce(proxy.port());
        assertThat(proxy.acceptedConnections()).isEqualTo(2);
        send(open, "b");
        assertThat(receive(open, 1)).isEqualTo("b");
        assertThat(proxy.openConnections()).isEqualTo(1);
        proxy.pass();
        Socket again = connect();
        send(again, "ok");
        assertThat(receive(again, 2)).isEqualTo("ok");
    }

    @Test
    void close_openConnections_closesThemAndStopsListening() throws IOException {
        Socket s = connect();
        send(s, "a");
        receive(s, 1);
        int port = proxy.port();
        proxy.close();
        proxy.close(); // idempotent
        s.setSoTimeout(5_000);
        assertThatThrownBy(() -> {
                    if (s.getInputStream().read() < 0) {
                        throw new SocketException("closed");
                    }
                })
                .isInstanceOf(IOException.class)
                .isNotInstanceOf(SocketTimeoutException.class);
        assertThat(proxy.openConnections()).isZero();
        // Every thread ends, the acceptor included (connecting to the freed port would race with
        // other processes that may be handed it).
        await().atMost(Duration.ofSeconds(5)).until(() -> Thread.getAllStackTraces().keySet().stream()
                .noneMatch(t -> t.getName().startsWith("dlock-fault-proxy-" + port + "-")));
    }

    @Test
    void badInput_rejectedAndChangesNothing() {
        assertThatThrownBy(() -> proxy.latency(Direction.BOTH, Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("delay");
        assertThatThrownBy(() -> proxy.latency(Direction.BOTH, Duration.ofMinutes(2)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(proxy.rule(Direction.UPSTREAM).mode()).isEqualTo(Mode.PASS);
        assertThatThrownBy(() -> proxy.rule(Direction.BOTH)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> FaultProxy.start(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("targetPort");
        assertThatThrownBy(() -> FaultProxy.start(InetSocketAddress.createUnresolved("no.such.host.invalid", 1)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    /**
     * A connection to {@code port} ends with an error, not a timeout. The proxy resets it at once:
     * that shows either in the connect itself or in the first read, depending on who is faster.
     */
    private void assertEndsAtOnce(int port) {
        Socket s = new Socket();
        sockets.add(s);
        assertThatThrownBy(() -> {
                    s.connect(new InetSocketAddress("127.0.0.1", port), 5_000);
                    s.setSoTimeout(5_000);
                    if (s.getInputStream().read() < 0) {
                        throw new SocketException("closed");
                    }
                })
                .isInstanceOf(IOException.class)
                .isNotInstanceOf(SocketTimeoutException.class);
    }

    private Socket connect() throws IOException {
        Socket s = new Socket();
        sockets.add(s);
        s.connect(new InetSocketAddress("127.0.0.1", proxy.port()), 5_000);
        s.setSoTimeout(5_000);
        return s;
    }

    private static void send(Socket s, String text) throws IOException {
        s.getOutputStream().write(text.getBytes(StandardCharsets.UTF_8));
        s.getOutputStream().flush();
    }

    private static String receive(Socket s, int bytes) throws IOException {
        InputStream in = s.getInputStream();
        byte[] data = in.readNBytes(bytes);
        return new String(data, StandardCharsets.UTF_8);
    }
}
