package io.dlock.core;

import static io.dlock.core.LockState.CANCELLED;
import static io.dlock.core.LockState.HELD;
import static io.dlock.core.LockState.IDLE;
import static io.dlock.core.LockState.LOST;
import static io.dlock.core.LockState.QUEUED;
import static io.dlock.core.LockState.RELEASED;
import static io.dlock.core.LockState.RELEASING;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.dlock.LockClient;
import io.dlock.LockOptions;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** The acquisition state machine against an explicit table of legal edges, over every pair. */
class LockStateTest {

    /** The expected machine, written out independently of {@link LockState}'s own table. */
    private static final Map<LockState, Set<LockState>> EXPECTED = new EnumMap<>(LockState.class);

    static {
        EXPECTED.put(IDLE, EnumSet.of(QUEUED, CANCELLED));
        EXPECTED.put(QUEUED, EnumSet.of(HELD, CANCELLED));
        EXPECTED.put(HELD, EnumSet.of(RELEASING, LOST));
        EXPECTED.put(RELEASING, EnumSet.of(RELEASED));
        EXPECTED.put(RELEASED, EnumSet.noneOf(LockState.class));
        EXPECTED.put(LOST, EnumSet.noneOf(LockState.class));
        EXPECTED.put(CANCELLED, EnumSet.noneOf(LockState.class));
    }

    private final List<LockClient> clients = new ArrayList<>();

    @AfterEach
    void tearDown() {
        clients.forEach(LockClient::close);
    }

    static Stream<Arguments> legalEdges() {
        return allPairs().filter(a -> EXPECTED.get((LockState) a.get()[0]).contains((LockState) a.get()[1]));
    }

    static Stream<Arguments> illegalEdges() {
        return allPairs().filter(a -> !EXPECTED.get((LockState) a.get()[0]).contains((LockState) a.get()[1]));
    }

    private static Stream<Arguments> allPairs() {
        List<Arguments> pairs = new ArrayList<>();
        for (LockState from : LockState.values()) {
            for (LockState to : LockState.values()) {
                pairs.add(Arguments.of(from, to));
            }
        }
        return pairs.stream();
    }

    @Test
    void table_coversEveryState() {
        assertThat(EXPECTED.keySet()).containsExactlyInAnyOrder(LockState.values());
        assertThat(legalEdges().count()).isEqualTo(7);
        assertThat(illegalEdges().count()).isEqualTo(7 * 7 - 7);
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @MethodSource("legalEdges")
    void canMoveTo_legalEdge_true(LockState from, LockState to) {
        assertThat(from.canMoveTo(to)).isTrue();
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @MethodSource("illegalEdges")
    void canMoveTo_illegalEdge_false(LockState from, LockState to) {
        assertThat(from.canMoveTo(to)).isFalse();
    }

    @Test
    void canMoveTo_terminalStates_haveNoWayOut() {
        for (LockState terminal : List.of(RELEASED, LOST, CANCELLED)) {
            for (LockState next : LockState.values()) {
                assertThat(terminal.canMoveTo(next))
                        .as("%s -> %s", terminal, next)
                        .isFalse();
            }
        }
    }

    private Acquisition newAcquisition(String name) {
        LockClient client = LockEngine.newClient(InMemoryBackend.create(), LockOptions.defaults());
        clients.add(client);
        return new Acquisition((EngineClient) client, name, io.dlock.spi.LockMode.EXCLUSIVE, 1, 1, null, true, null);
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @MethodSource("illegalEdges")
    void transition_illegalEdge_throwsIllegalStateNamingLockAndEdge(LockState from, LockState to) {
        Acquisition a = newAcquisition("x");

        assertThatThrownBy(() -> a.transition(from, to))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("lock 'x': " + from + " -> " + to);
        assertThat(a.state()).isEqualTo(IDLE);
    }

    @Test
    void transition_legalEdgeFromWrongState_returnsFalseAndChangesNothing() {
        Acquisition a = newAcquisition("x");

        assertThat(a.transition(HELD, RELEASING)).isFalse();
        assertThat(a.state()).isEqualTo(IDLE);
    }

    @Test
    void transition_pathToRelease_followsEveryEdgeOnce() {
        Acquisition a = newAcquisition("x");

        assertThat(a.transition(IDLE, QUEUED)).isTrue();
        assertThat(a.transition(QUEUED, HELD)).isTrue();
        assertThat(a.transition(QUEUED, HELD)).isFalse(); // lost the CAS: already HELD
        assertThat(a.transition(HELD, RELEASING)).isTrue();
        assertThat(a.transition(HELD, LOST)).isFalse(); // a released grant cannot be lost
        assertThat(a.transition(RELEASING, RELEASED)).isTrue();
        assertThat(a.state()).isEqualTo(RELEASED);
    }

    @Test
    void transition_heldToLost_isTerminal() {
        Acquisition a = newAcquisition("x");
        a.transition(IDLE, QUEUED);
        a.transition(QUEUED, HELD);

        assertThat(a.transition(HELD, LOST)).isTrue();
        assertThat(a.transition(HELD, RELEASING)).isFalse();
        assertThat(a.state()).isEqualTo(LOST);
    }
}
