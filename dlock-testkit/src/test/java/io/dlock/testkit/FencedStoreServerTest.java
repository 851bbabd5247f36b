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

    @Test
    void occupancy_twoWritersOverTcp_unfenced_violationCounted() {
        OccupancyStore occupancy = OccupancyStore.readWrite();
        try (FencedStoreServer server = FencedStoreServer.start(FencedStore.unfenced(), occupancy);
                FencedStoreServer.Client a = FencedStoreServer.Client.connect(server.port(), "w1");
                FencedStoreServer.Client b = FencedStoreServer.Client.connect(server.port(), "w2")) {
            assertThat(a.enter(1, OccupancyStore.Mode.WRITE, 1)).isEqualTo(OccupancyStore.Admission.ADMITTED);
            assertThat(b.enter(2, OccupancyStore.Mode.WRITE, 1)).isEqualTo(OccupancyStore.Admission.VIOLATION);
            assertThat(a.leave(1)).isEqualTo(OccupancyStore.Exit.LEFT);
            assertThat(b.leave(2)).isEqualTo(OccupancyStore.Exit.LEFT);
            assertThat(server.occupancy()).containsSame(occupancy);
            OccupancyStore.Report r = occupancy.report();
            assertThat(r.violations()).isEqualTo(1);
            assertThat(r.safe()).isFalse();
        }
    }

    @Test
    void occupancy_fencedSemaphoreOverTcp_oldestFencedOut_staleRefused() {
        OccupancyStore occupancy = OccupancyStore.fencedSemaphore(1);
        try (FencedStoreServer server = FencedStoreServer.start(FencedStore.unfenced(), occupancy);
                FencedStoreServer.Client a = FencedStoreServer.Client.connect(server.port(), "a");
                FencedStoreServer.Client b = FencedStoreServer.Client.connect(server.port(), "b")) {
            assertThat(a.enter(3, OccupancyStore.Mode.PERMITS, 1)).isEqualTo(OccupancyStore.Admission.ADMITTED);
            assertThat(b.enter(4, OccupancyStore.Mode.PERMITS, 1)).isEqualTo(OccupancyStore.Admission.ADMITTED);
            assertThat(a.leave(3)).isEqualTo(OccupancyStore.Exit.STALE);
            assertThat(a.enter(2, OccupancyStore.Mode.PERMITS, 1)).isEqualTo(OccupancyStore.Admission.STALE);
            // the same token as the holder inside: no room once only older holders are counted out
            assertThat(a.enter(4, OccupancyStore.Mode.PERMITS, 1)).isEqualTo(OccupancyStore.Admission.STALE);
            OccupancyStore.Report r = occupancy.report();
            assertThat(r.fencedOut()).isEqualTo(1);
            assertThat(r.staleRefused()).isEqualTo(3);
            assertThat(r.violations()).isZero();
            assertThat(r.maxPermits()).isEqualTo(1);
        }
    }

    @Test
    void occupancy_malformedOrMissing_errorAndNothingRecorded() {
        OccupancyStore occupancy = OccupancyStore.fencedReadWrite();
        try (FencedStoreServer plain = FencedStoreServer.start(FencedStore.fenced());
                FencedStoreServer server = FencedStoreServer.start(FencedStore.fenced(), occupancy)) {
            assertThat(plain.handle("ENTER a 1 WRITE 1")).startsWith("ERROR this store checks no shared primitive");
            assertThat(plain.handle("LEAVE a 1")).startsWith("ERROR this store checks no shared primitive");
            assertThat(server.handle("ENTER a 1 WRITE")).startsWith("ERROR usage");
            assertThat(server.handle("ENTER a 1 SHARED 1")).startsWith("ERROR token and permits");
            assertThat(server.handle("ENTER a x WRITE 1")).startsWith("ERROR token and permits");
            assertThat(server.handle("ENTER a 1 WRITE 0")).startsWith("ERROR token and permits");
            assertThat(server.handle("ENTER a 1 PERMITS 1")).startsWith("ERROR PERMITS does not fit");
            assertThat(server.handle("ENTER bad/name 1 WRITE 1")).startsWith("ERROR client");
            assertThat(server.handle("LEAVE a")).startsWith("ERROR usage");
            assertThat(server.handle("LEAVE a x")).startsWith("ERROR token");
            assertThat(occupancy.report().entries()).isZero();
            assertThat(occupancy.report().misuses()).isZero();
        }
        try (FencedStoreServer plain = FencedStoreServer.start(FencedStore.fenced());
                FencedStoreServer.Client c = FencedStoreServer.Client.connect(plain.port(), "c")) {
            assertThatThrownBy(() -> c.enter(1, OccupancyStore.Mode.WRITE, 1))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("ENTER: unexpected response 'ERROR");
        }
    }
}
