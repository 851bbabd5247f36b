package io.dlock.zookeeper;

import java.util.List;

/**
 * Names and order of lock nodes. A node is {@code _c_<acquisition id>-lock-<sequence>}, the form
 * Curator's {@code InterProcessMutex} uses with protection, so both recipes see one queue.
 *
 * <p>ZooKeeper's sequence is a signed 32-bit counter per parent that wraps from 2147483647 to
 * -2147483648. Nodes are ordered by serial-number arithmetic relative to a reference node
 * ({@code (int) (a - b)}), which is correct as long as the live queue spans fewer than 2^31
 * creations, unlike a plain string or numeric sort.
 */
final class LockNodes {
    static final String PROTECTED_PREFIX = "_c_";
    static final String LOCK_MARKER = "lock-";

    private LockNodes() {}

    /** The prefix ZooKeeper appends the sequence to. */
    static String prefix(String acquisitionId) {
        return PROTECTED_PREFIX + acquisitionId + "-" + LOCK_MARKER;
    }

    /** Whether {@code child} is a lock node (ours or Curator's). */
    static boolean isLockNode(String child) {
        int i = child.lastIndexOf(LOCK_MARKER);
        if (i < 0 || i + LOCK_MARKER.length() >= child.length()) {
            return false;
        }
        String seq = child.substring(i + LOCK_MARKER.length());
        int start = seq.charAt(0) == '-' ? 1 : 0;
        if (start == seq.length()) {
            return false;
        }
        for (int k = start; k < seq.length(); k++) {
            if (!Character.isDigit(seq.charAt(k))) {
                return false;
            }
        }
        return true;
    }

    /** The sequence number of a lock node. */
    static int sequence(String child) {
        return Integer.parseInt(child.substring(child.lastIndexOf(LOCK_MARKER) + LOCK_MARKER.length()));
    }

    /** Whether {@code child} was created for {@code acquisitionId}. */
    static boolean belongsTo(String child, String acquisitionId) {
        return child.startsWith(PROTECTED_PREFIX + acquisitionId + "-");
    }

    /**
     * The lock node immediately ahead of {@code own} in the queue, or null if {@code own} is first.
     *
     * @param own the node whose predecessor to find; must be a lock node
     * @param children the parent's children, in any order
     */
    static String predecessor(String own, List<String> children) {
        int mine = sequence(own);
        String best = null;
        int bestDistance = Integer.MIN_VALUE;
        for (String child : children) {
            if (!isLockNode(child)) {
                continue;
            }
            int distance = sequence(child) - mine; // wraps: serial-number arithmetic
            if (distance < 0 && (best == null || distance > bestDistance)) {
                best = child;
                bestDistance = distance;
            }
        }
        return best;
    }
}
