package io.dlock.memcached;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * The quarantine's end from {@code stats}' {@code time} and {@code uptime}. Memcached reports
 * {@code uptime} two seconds more than it has run ({@code time - uptime} is its start less two
 * seconds), which {@code MemcachedFaultIT} checks against a real server.
 */
class DataLossGuardTest {

    private static final long T = 1_800_000_000L;

    @Test
    void quarantineEnd_noticedWithinTheLeaseOfTheStart_countsFromTheStart() {
        DataLossGuard g = new DataLossGuard(2, 2);
        // started at T (uptime 2 at once): lease 2 + clock slack 1 from T, whenever noticed up to T + 2
        assertThat(g.quarantineEnd(T, 2)).isEqualTo(T + 3);
        assertThat(g.quarantineEnd(T + 1, 3)).isEqualTo(T + 3);
        assertThat(g.quarantineEnd(T + 2, 4)).isEqualTo(T + 3);
    }

    @Test
    void quarantineEnd_noticedLaterThanTheLeaseAfterTheStart_countsFromTheNotice() {
        DataLossGuard g = new DataLossGuard(2, 2);
        // a grant may have happened in this life (its markers end at T + 3 or later): from now
        assertThat(g.quarantineEnd(T + 3, 5)).isEqualTo(T + 6);
        assertThat(g.quarantineEnd(T + 100, 102)).isEqualTo(T + 103);
    }

    @Test
    void quarantineEnd_longerQuarantineThanThisClientsLease_usesTheQuarantineAndThisLeaseForTheWindow() {
        DataLossGuard g = new DataLossGuard(10, 2);
        assertThat(g.quarantineEnd(T + 2, 4)).isEqualTo(T + 11);
        assertThat(g.quarantineEnd(T + 3, 5)).isEqualTo(T + 14);
    }

    @Test
    void quarantineEnd_aServerThatDatesItsStartExactly_neverEndsEarlierThanFromTheNotice() {
        DataLossGuard g = new DataLossGuard(2, 2);
        // uptime below memcached's two-second offset: the start is taken as the reading itself
        assertThat(g.quarantineEnd(T, 0)).isEqualTo(T + 3);
        assertThat(g.quarantineEnd(T + 1, 1)).isEqualTo(T + 4);
    }

    @Test
    void constructor_leaseLongerThanTheQuarantine_refused() {
        assertThatThrownBy(() -> new DataLossGuard(2, 3))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("quarantine");
    }
}
