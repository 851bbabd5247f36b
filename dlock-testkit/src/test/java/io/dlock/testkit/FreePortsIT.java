package io.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Test JVMs that run side by side are never handed the same port. */
class FreePortsIT {

    private static final Duration START = Timing.scale(Duration.ofSeconds(20));

    @Test
    void loopback_twoJvmsAtOnce_handOutDisjointPortsBelowTheEphemeralRange() {
        int count = FreePorts.BLOCK + 50; // past one block, so the child claims a second one
        try (ChildJvm child = ChildJvm.start(PortsMain.class, List.of(Integer.toString(count)))) {
            String line = child.awaitLine("PORTS ", START);
            List<Integer> theirs = Arrays.stream(
                            line.substring("PORTS ".length()).split(" "))
                    .map(Integer::valueOf)
                    .toList();
            List<Integer> ours = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                ours.add(FreePorts.loopback());
            }
            assertThat(theirs).hasSize(count).doesNotHaveDuplicates();
            assertThat(ours).doesNotHaveDuplicates();
            Set<Integer> shared = new HashSet<>(ours);
            shared.retainAll(theirs);
            assertThat(shared).as("ports handed to both JVMs").isEmpty();
            assertThat(ours).allSatisfy(p -> assertThat(p).isLessThan(FreePorts.ephemeralStart()));
            assertThat(theirs).allSatisfy(p -> assertThat(p).isLessThan(FreePorts.ephemeralStart()));
        }
    }
}
