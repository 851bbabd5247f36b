package io.dlock.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.dlock.spi.EntrySnapshot;
import io.dlock.spi.LockInspector.ForcedReleaseNotice;
import io.dlock.spi.LockKind;
import io.dlock.spi.LockMode;
import io.dlock.spi.LockSnapshot;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class ReleaseCommandTest {

    private static List<LockSnapshot> holder(Duration leaseLeft) {
        EntrySnapshot e = new EntrySnapshot("k", LockMode.EXCLUSIVE, 1, "c", null, -1, null, 7, null, leaseLeft);
        return List.of(new LockSnapshot("orders", LockKind.EXCLUSIVE, 1, List.of(e), List.of()));
    }

    @Test
    void holderWindow_serverNotifies_saysTheHolderIsToldAtOnce() {
        assertThat(ReleaseCommand.holderWindow(ForcedReleaseNotice.AT_ONCE, "redis", holder(null)))
                .startsWith("the holder is told at once (within about 1 s)")
                .doesNotContain("warning");
    }

    @Test
    void holderWindow_nextRenewalWithLeaseLeft_statesTheLeaseLeftAsTheBound() {
        assertThat(ReleaseCommand.holderWindow(
                        ForcedReleaseNotice.NEXT_RENEWAL, "memcached", holder(Duration.ofMillis(25_900))))
                .contains(
                        "warning: on memcached the removed holder may still consider its lease valid for up to 25.9s",
                        "(until its next renewal, every third of its lease)");
    }

    @Test
    void holderWindow_nextRenewalWithoutLeaseLeft_statesTheRule() {
        assertThat(ReleaseCommand.holderWindow(ForcedReleaseNotice.NEXT_RENEWAL, "jdbc", holder(null)))
                .contains("for up to a third of its lease time (until its next renewal");
    }

    @Test
    void holderWindow_notTold_warnsThatOnlyTheFencingTokenProtects() {
        assertThat(ReleaseCommand.holderWindow(ForcedReleaseNotice.NOT_TOLD, "zookeeper", holder(null)))
                .contains("is not told", "only the fencing token");
    }
}
