package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class FreePortsTest {

    @Test
    void loopback_returnsPortThatCanBeBoundOnLoopback() throws Exception {
        int port = FreePorts.loopback();
        assertThat(port).isBetween(1, 65_535);
        try (ServerSocket socket = new ServerSocket()) {
            socket.bind(new InetSocketAddress("127.0.0.1", port));
            assertThat(socket.getLocalPort()).isEqualTo(port);
        }
    }

    @Test
    void loopback_manyCalls_neverRepeatsRecentPort() {
        Set<Integer> ports = new HashSet<>();
        for (int i = 0; i < 100; i++) {
            assertThat(ports.add(FreePorts.loopback()))
                    .as("call %d returned a repeated port", i)
                    .isTrue();
        }
    }
}
