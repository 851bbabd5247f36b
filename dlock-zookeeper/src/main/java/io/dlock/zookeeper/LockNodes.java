package io.dlock.zookeeper;

import io.dlock.spi.LockMode;
import io.dlock.spi.QueueEntry;
import java.util.List;
import org.jspecify.annotations.Nullable;

/**
 * Names and order of queue nodes. A node is {@code _c_<acquisition id>-<marker><sequence>}, the
 * form Curator's recipes use with protection, so that dlock and Curator see one queue:
 *
 * <ul>
 *   <li>exclusive lock: marker {@code lock-} (Curator's {@code InterProcessMutex});
 *   <li>read-write lock: {@code __READ__} and {@code __WRIT__} (Curator's {@code
 *       InterProcessReadWriteLock}); a read taken under the same thread's write lock (a downgrade)
 *       is {@code dg__READ__}, which Curator still reads as a read node;
 *   <li>semaphore: {@code p<permits>-sem-}, the node's permits in its name.
 * </ul>
 *
 * <p>Each primitive sees only its own family of nodes under a name. ZooKeeper's sequence is one
 * signed 32-bit counter per parent that wraps from 2147483647 to -2147483648; nodes are ordered by
 * serial-number arithmetic relative to a reference node ({@code (int) (a - b)}), which is correct
 * as long as the live queue spans fewer than 2^31 creations, unlike a plain string or numeric sort.
 */
final class LockNodes {
    static final String PROTECTED_PREFIX = "_c_";
    static final String LOCK_MARKER = "lock-";
    static final String READ_MARKER = "__READ__";
    static final String WRITE_MARKER = "__WRIT__";
    static final String SEMAPHORE_MARKER = "-sem-";
    /** Put before {@link #READ_MARKER} on a downgrade's read node. */
    static final String DOWNGRADE_FLAG = "dg";
    /** How a downgrade's read node name ends before its sequence; an acquisition id ends before "-". */
    private static final String DOWNGRADE_TAIL = "-" + DOWNGRADE_FLAG + READ_MARKER;
    /** How an exclusive node's name ends before its sequence. */
    private static final String EXCLUSIVE_TAIL = "-" + LOCK_MARKER;

    private LockNodes() {}

    /**
     * A parsed queue node.
     *
     * @param downgrade a read node created while its thread's own write node existed (checked in
     *     the same transaction), so it is granted and blocks every writer until it is deleted
     */
    record Node(String name, LockMode mode, int sequence, int permits, boolean downgrade) {
        Node(String name, LockMode mode, int sequence, int permits) {
            this(name, mode, sequence, permits, false);
        }
    }

    /** The prefix ZooKeeper appends the sequence to. */
    static String prefix(String acquisitionId, LockMode mode, int permits) {
        // One concatenation each: the uncontended cycle builds these names on every acquisition.
        return switch (mode) {
            case EXCLUSIVE -> PROTECTED_PREFIX + acquisitionId + EXCLUSIVE_TAIL;
            case READ -> PROTECTED_PREFIX + acquisitionId + "-" + READ_MARKER;
            case WRITE -> PROTECTED_PREFIX + acquisitionId + "-" + WRITE_MARKER;
            case SEMAPHORE -> PROTECTED_PREFIX + acquisitionId + "-p" + permits + SEMAPHORE_MARKER;
        };
    }

    /** The prefix of a downgrade's read node. */
    static String downgradePrefix(String acquisitionId) {
        return PROTECTED_PREFIX + acquisitionId + "-" + DOWNGRADE_FLAG + READ_MARKER;
    }

    /**
     * An entry's key for the node {@code nodeName} of acquisition {@code acquisitionId}: an
     * exclusive node's sequence number alone (its name is {@link #prefix(String)} and that), any
     * other node's whole name. A held exclusive lock so keeps a 10-character key (W4).
     */
    static String key(String nodeName, String acquisitionId) {
        int tail = PROTECTED_PREFIX.length() + acquisitionId.length();
        boolean exclusive = nodeName.startsWith(PROTECTED_PREFIX)
                && nodeName.startsWith(acquisitionId, PROTECTED_PREFIX.length())
                && nodeName.startsWith(EXCLUSIVE_TAIL, tail);
        return exclusive ? nodeName.substring(tail + EXCLUSIVE_TAIL.length()) : nodeName;
    }

    /** The node's name of {@code entry}, from its {@link #key}. */
    static String nodeName(QueueEntry entry) {
        String key = entry.key();
        return key.startsWith(PROTECTED_PREFIX) ? key : PROTECTED_PREFIX + entry.acquisitionId() + EXCLUSIVE_TAIL + key;
    }

    /** The exclusive-lock prefix. */
    static String prefix(String acquisitionId) {
        return prefix(acquisitionId, LockMode.EXCLUSIVE, 1);
    }

    /** Parses a child name, or returns null if it is no queue node. */
    static @Nullable Node parse(String child) {
        int seqStart = sequenceStart(child);
        if (seqStart < 0) {
            return null;
        }
        String head = child.substring(0, seqStart);
        int sequence;
        try {
            sequence = Integer.parseInt(child.substring(seqStart));
        } catch (NumberFormatException e) {
            return null;
        }
        if (head.endsWith(READ_MARKER)) {
            return new Node(child, LockMode.READ, sequence, 1, head.endsWith(DOWNGRADE_TAIL));
        }
        if (head.endsWith(WRITE_MARKER)) {
            return new Node(child, LockMode.WRITE, sequence, 1);
        }
        if (head.endsWith(SEMAPHORE_MARKER)) {
            int p = head.lastIndexOf("-p", head.length() - SEMAPHORE_MARKER.length() - 1);
            try {
                int permits = Integer.parseInt(head.substring(p + 2, head.length() - SEMAPHORE_MARKER.length()));
                return p < 0 || permits < 1 ? null : new Node(child, LockMode.SEMAPHORE, sequence, permits);
            } catch (NumberFormatException | StringIndexOutOfBoundsException e) {
                return null;
            }
        }
        if (head.endsWith(LOCK_MARKER)) {
            return new Node(child, LockMode.EXCLUSIVE, sequence, 1);
        }
        return null;
    }

    /** Where the trailing sequence (digits, maybe after a minus sign) starts, or -1. */
    private static int sequenceStart(String child) {
        int i = child.length();
        while (i > 0 && Character.isDigit(child.charAt(i - 1))) {
            i--;
        }
        if (i == child.length()) {
            return -1;
        }
        // A minus sign belongs to the sequence only right after a marker ("lock--2147483648").
        if (i > 0
                && child.charAt(i - 1) == '-'
                && i > 1
                && (child.startsWith(LOCK_MARKER, i - 1 - LOCK_MARKER.length())
                        || child.startsWith(SEMAPHORE_MARKER, i - 1 - SEMAPHORE_MARKER.length())
                        || child.startsWith(READ_MARKER, i - 1 - READ_MARKER.length())
                        || child.startsWith(WRITE_MARKER, i - 1 - WRITE_MARKER.length()))) {
            return i - 1;
        }
        return i;
    }

    /** Whether {@code child} is an exclusive-lock node (ours or Curator's). */
    static boolean isLockNode(String child) {
        Node n = parse(child);
        return n != null && n.mode() == LockMode.EXCLUSIVE;
    }

    /** The sequence number of a queue node. */
    static int sequence(String child) {
        return java.util.Objects.requireNonNull(parse(child), child).sequence();
    }

    /** Whether {@code child} was created for {@code acquisitionId}. */
    static boolean belongsTo(String child, String acquisitionId) {
        return child.startsWith(PROTECTED_PREFIX + acquisitionId + "-");
    }

    /** Whether two modes share one queue. */
    static boolean sameFamily(LockMode a, LockMode b) {
        return a == b || (a == LockMode.READ || a == LockMode.WRITE) && (b == LockMode.READ || b == LockMode.WRITE);
    }

    /** The nodes of {@code own}'s family that are ahead of it, nearest first. */
    static List<Node> ahead(Node own, List<String> children) {
        return children.stream()
                .map(LockNodes::parse)
                .filter(n -> n != null && sameFamily(n.mode(), own.mode()) && n.sequence() - own.sequence() < 0)
                .sorted((a, b) -> Integer.compare(b.sequence() - own.sequence(), a.sequence() - own.sequence()))
                .toList();
    }

    /**
     * The name of the node of {@code own}'s family nearest ahead of it, or null if none is: what
     * {@link #ahead} would put first, without sorting (a lone node, the uncontended case, parses
     * nothing but itself).
     */
    static @Nullable String nearestAhead(Node own, List<String> children) {
        String nearest = null;
        int nearestDistance = 0;
        for (String child : children) {
            if (child.equals(own.name())) {
                continue;
            }
            Node n = parse(child);
            if (n == null || !sameFamily(n.mode(), own.mode())) {
                continue;
            }
            int distance = n.sequence() - own.sequence();
            if (distance < 0 && (nearest == null || distance > nearestDistance)) {
                nearest = child;
                nearestDistance = distance;
            }
        }
        return nearest;
    }

    /** A downgrade's read node among {@code children}, or null if there is none. */
    static @Nullable String downgradeRead(List<String> children) {
        for (String child : children) {
            Node n = parse(child);
            if (n != null && n.downgrade()) {
                return child;
            }
        }
        return null;
    }

    /**
     * The exclusive-lock node immediately ahead of {@code own}, or null if {@code own} is first.
     *
     * @param own the node whose predecessor to find; must be a lock node
     * @param children the parent's children, in any order
     */
    static @Nullable String predecessor(String own, List<String> children) {
        List<Node> ahead = ahead(java.util.Objects.requireNonNull(parse(own), own), children);
        return ahead.isEmpty() ? null : ahead.get(0).name();
    }
}
