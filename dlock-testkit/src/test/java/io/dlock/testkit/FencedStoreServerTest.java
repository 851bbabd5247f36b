package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.UncheckedIOException;
import org.junit.jupiter.api.Test;

class FencedStoreServerTest {

    @Test
    void readAndWrite_overTcp_recordedInTheStore() {
        try (FencedStoreServer server = FencedStoreServer.start(FencedStore.fenced());
                FencedStoreServer.Client a = FencedStoreServer.Client.connect(server.port(), "worker-1");
                FencedStoreServer.Client b = FencedStoreServer.Client.connect(server.port(), "worker-2")) {
            assertThat(a.read(5)).hasValue(0);
            assertThat(a.write(5, 1)).isTrue();
            assertThat(b.read(7)).hasValue(1);
            assertThat(a.write(5, 9)).isFalse(); // stale: b has read with 7
            assertThat(a.read(5)).isEmpty();
            assertThat(b.write(7, 2)).isTrue();
            FencedStore store = server.store();
            assertThat(store.value()).isEqualTo(2);
            assertThat(store.accesses())
                    .extracting(FencedStore.Access::client)
                    .containsExactly("worker-1", "worker-1", "worker-2", "worker-1", "worker-1", "worker-2");
            assertThat(store.check().safe()).isTrue();
        }
    }

    @Test
    void handle_malformedRequests_errorAndNothingRecorded() {
        try (FencedStoreServer server = FencedStoreServer.start(FencedStore.fenced())) {
            assertThat(server.handle("READ")).startsWith("ERROR usage");
            assertThat(server.handle("READ a x")).startsWith("ERROR token");
            assertThat(server.handle("WRITE a 1")).startsWith("ERROR usage");
            assertThat(server.handle("WRITE a 1 x")).startsWith("ERROR");
            assertThat(server.handle("WRITE bad/name 1 1")).startsWith("ERROR client");
            assertThat(server.handle("DELETE")).startsWith("ERROR unknown request");
            assertThat(server.handle("X".repeat(300))).startsWith("ERROR line longer");
            assertThat(server.store().accessCount()).isZero();
        }
    }

    @Test
    void connect_badNameOrClosedServer_clearException() {
        FencedStoreServer server = FencedStoreServer.start(FencedStore.fenced());
        int port = server.port();
        assertThatThrownBy(() -> FencedStoreServer.Client.connect(port, "has space"))
                .isInstanceOf(IllegalArgumentException.class);
        server.close();
        server.close();
        assertThatThrownBy(() -> FencedStoreServer.Client.connect(port, "late"))
                .isInstanceOf(UncheckedIOException.class)
                .hasMessageContaining("unreachable");
    }
}
