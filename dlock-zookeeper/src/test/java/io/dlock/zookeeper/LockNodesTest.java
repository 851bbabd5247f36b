package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class LockNodesTest {
    private static String node(String id, int seq) {
        return LockNodes.prefix(id) + String.format(java.util.Locale.ENGLISH, "%010d", seq);
    }

    @Test
    void key_exclusiveNodeKeepsItsSequenceOnly_othersTheirName_andTheNameComesBack() {
        String id = "0123456789abcdef-42";
        String exclusive = node(id, 7);
        String negative = node(id, Integer.MIN_VALUE);
        String write = LockNodes.prefix(id, io.dlock.spi.LockMode.WRITE, 1) + "0000000008";
        String downgrade = LockNodes.downgradePrefix(id) + "0000000009";
        String semaphore = LockNodes.prefix(id, io.dlock.spi.LockMode.SEMAPHORE, 3) + "0000000010";
        assertThat(LockNodes.key(exclusive, id)).isEqualTo("0000000007");
        assertThat(LockNodes.key(negative, id)).isEqualTo("-2147483648");
        // Another acquisition's exclusive node is not shortened by this id's prefix.
        assertThat(LockNodes.key(node("fedcba9876543210-1", 5), id)).isEqualTo(node("fedcba9876543210-1", 5));
        for (String name : List.of(exclusive, negative, write, downgrade, semaphore)) {
            io.dlock.spi.QueueEntry entry = new io.dlock.spi.QueueEntry("lock", id, LockNodes.key(name, id), 1, 2);
            assertThat(LockNodes.nodeName(entry)).as(name).isEqualTo(name);
        }
        assertThat(LockNodes.key(write, id)).isEqualTo(write);
        assertThat(LockNodes.key(downgrade, id)).isEqualTo(downgrade);
        assertThat(LockNodes.key(semaphore, id)).isEqualTo(semaphore);
    }

    @Test
    void predecessor_plainSequences_isNextLower() {
        List<String> children = List.of(node("c", 3), node("a", 1), node("b", 2));
        assertThat(LockNodes.predecessor(node("a", 1), children)).isNull();
        assertThat(LockNodes.predecessor(node("b", 2), children)).isEqualTo(node("a", 1));
        assertThat(LockNodes.predecessor(node("c", 3), children)).isEqualTo(node("b", 2));
    }

    @Test
    void predecessor_aroundSequenceWrap_ordersByCreation() {
        // ZooKeeper's counter goes 2147483646, 2147483647, -2147483648, -2147483647.
        String a = node("a", Integer.MAX_VALUE - 1);
        String b = node("b", Integer.MAX_VALUE);
        String c = node("c", Integer.MIN_VALUE);
        String d = node("d", Integer.MIN_VALUE + 1);
        assertThat(c).endsWith("lock--2147483648");
        List<String> children = List.of(d, c, b, a);
        assertThat(LockNodes.predecessor(a, children)).isNull();
        assertThat(LockNodes.predecessor(b, children)).isEqualTo(a);
        assertThat(LockNodes.predecessor(c, children)).isEqualTo(b);
        assertThat(LockNodes.predecessor(d, children)).isEqualTo(c);
    }

    @Test
    void predecessor_afterWrapWithOnlyNegatives_firstIsHolder() {
        String c = node("c", Integer.MIN_VALUE);
        String d = node("d", Integer.MIN_VALUE + 1);
        assertThat(LockNodes.predecessor(c, List.of(d, c))).isNull();
        assertThat(LockNodes.predecessor(d, List.of(d, c))).isEqualTo(c);
    }

    @Test
    void isLockNode_curatorAndDlockNames_recognised() {
        assertThat(LockNodes.isLockNode("_c_7f3e-lock-0000000007")).isTrue();
        assertThat(LockNodes.isLockNode("lock-0000000007")).isTrue(); // Curator without protection
        assertThat(LockNodes.isLockNode("_c_x-lock--2147483648")).isTrue();
        assertThat(LockNodes.isLockNode("lease-0000000001")).isFalse();
        assertThat(LockNodes.isLockNode("_c_x-lock-")).isFalse();
        assertThat(LockNodes.isLockNode("_c_x-lock-12ab")).isFalse();
        assertThat(LockNodes.predecessor(node("b", 2), List.of("other", node("a", 1), node("b", 2))))
                .isEqualTo(node("a", 1));
    }

    @Test
    void belongsTo_matchesOnlyItsAcquisition() {
        assertThat(LockNodes.belongsTo(node("abc", 5), "abc")).isTrue();
        assertThat(LockNodes.belongsTo(node("abcd", 5), "abc")).isFalse();
    }

    @Test
    void parse_downgradeRead_isAReadFlaggedAsDowngrade() {
        String downgrade = LockNodes.downgradePrefix("id-7") + "0000000009";
        String read = LockNodes.prefix("id-7", io.dlock.spi.LockMode.READ, 1) + "0000000010";
        String write = LockNodes.prefix("id-8", io.dlock.spi.LockMode.WRITE, 1) + "0000000008";
        assertThat(LockNodes.parse(downgrade).mode()).isEqualTo(io.dlock.spi.LockMode.READ);
        assertThat(LockNodes.parse(downgrade).downgrade()).isTrue();
        assertThat(LockNodes.parse(downgrade).sequence()).isEqualTo(9);
        assertThat(LockNodes.parse(read).downgrade()).isFalse();
        assertThat(LockNodes.parse("_c_uuid-__READ__0000000001").downgrade()).isFalse(); // Curator's read node
        assertThat(LockNodes.belongsTo(downgrade, "id-7")).isTrue();
        assertThat(LockNodes.downgradeRead(List.of(write, read, downgrade))).isEqualTo(downgrade);
        assertThat(LockNodes.downgradeRead(List.of(write, read))).isNull();
    }

    private static LockNodes.Node parsed(String child) {
        return java.util.Objects.requireNonNull(LockNodes.parse(child), child);
    }

    @Test
    void nearestAhead_isWhatAheadPutsFirst_alsoAcrossTheSequencesWrap() {
        List<List<String>> cases = List.of(
                List.of(node("a", 1)),
                List.of(node("c", 3), node("a", 1), node("b", 2)),
                List.of(node("b", 2), "not-a-lock-node", node("a", 1), node("d", 9)),
                // Wrapped: MAX_VALUE is ahead of MIN_VALUE, which is ahead of MIN_VALUE + 1.
                List.of(node("y", Integer.MIN_VALUE + 1), node("w", Integer.MAX_VALUE), node("x", Integer.MIN_VALUE)),
                // Another family's nodes (a write lock's) are not in an exclusive lock's queue.
                List.of(
                        LockNodes.prefix("r", io.dlock.spi.LockMode.WRITE, 1) + "0000000004",
                        node("e", 5),
                        node("f", 6)));
        for (List<String> children : cases) {
            for (String child : children) {
                LockNodes.Node own = LockNodes.parse(child);
                if (own == null) {
                    continue;
                }
                List<LockNodes.Node> ahead = LockNodes.ahead(own, children);
                assertThat(LockNodes.nearestAhead(own, children))
                        .as(child + " in " + children)
                        .isEqualTo(ahead.isEmpty() ? null : ahead.get(0).name());
            }
        }
        assertThat(LockNodes.nearestAhead(parsed(node("f", 6)), cases.get(4))).isEqualTo(node("e", 5));
        assertThat(LockNodes.nearestAhead(parsed(node("e", 5)), cases.get(4))).isNull();
        assertThat(LockNodes.nearestAhead(parsed(node("y", Integer.MIN_VALUE + 1)), cases.get(3)))
                .isEqualTo(node("x", Integer.MIN_VALUE));
    }
}
