package io.dlock.zookeeper;

import org.jspecify.annotations.Nullable;

/**
 * Proves, from one session's own writes, that a node it has just created is alone under its
 * parent, so that the uncontended cycle needs no read of the queue: the floor's create and delete.
 *
 * <p>Why it holds: the ensemble gives every transaction the next zxid of the epoch, and nothing
 * changes the tree but a transaction. One session's requests are answered in the order they were
 * sent, which for writes is their zxid order. So the writes of this session answered between the
 * reply creating node {@code a} and the reply creating node {@code b} are transactions with zxids
 * between the two. If this session counted {@code b - a - 1} of them, every transaction between
 * {@code a} and {@code b} was one of its own. If, besides, {@code a} was alone under the parent
 * (read so, or proven so), none of those writes created a node under it (each create consumes the
 * parent's record here), and one of them deleted {@code a}, then the parent holds {@code b} alone.
 * A write of this session that is not counted (sent through the ordinary API, or answered with an
 * error), a transaction of another session, a session's end, a leader's new epoch and the server's
 * own deletes of empty containers all leave a zxid uncounted, and the queue is then read as usual.
 *
 * <p>One client running alone on an ensemble over many lock names is the case this serves: the
 * 2026-11-28 W5 measurement (64 threads, 10,000 names) read the queue on every cycle under the
 * older rule, which allowed only the delete of the one previous node between the two creates.
 *
 * <p>Memory: one record per parent, in a table of 1,024 slots (two a bucket) that doubles up to
 * 65,536 (about 1.3 MB) while records that could still save a read are pushed out by others; a
 * record pushed out only costs a read.
 *
 * <p>Threads: every method but {@link #mayBeAlone} runs on the session's I/O thread, in reply
 * order; {@link #mayBeAlone} is a hint read from any thread, and a stale answer only costs a round
 * trip.
 */
final class AloneLedger {
    private static final byte ALONE = 1;
    private static final byte DELETED = 2;
    private static final int INITIAL_SLOTS = 1 << 10;
    private static final int MAX_SLOTS = 1 << 16;

    /**
     * The parent records, replaced whole when the table grows: two slots a bucket, chosen by the
     * parent's hash, so that two busy parents sharing a bucket do not push each other out.
     */
    private static final class Slots {
        final @Nullable String[] keys;
        final long[] zxids;
        final long[] writesAt;
        final byte[] states;
        private final int shift;

        Slots(int size) {
            keys = new String[size];
            zxids = new long[size];
            writesAt = new long[size];
            states = new byte[size];
            shift = Integer.numberOfLeadingZeros(size) + 2; // size / 2 buckets
        }

        /** {@code key}'s slot, or -1. */
        int find(String key) {
            int i = bucket(key);
            return key.equals(keys[i]) ? i : key.equals(keys[i + 1]) ? i + 1 : -1;
        }

        /** The first slot of {@code key}'s bucket (Fibonacci hashing: a string's low bits are poor). */
        int bucket(String key) {
            return ((key.hashCode() * 0x9E3779B9) >>> shift) << 1;
        }

        /** Where a record of {@code key} goes: its own slot, else an empty one, else the older one. */
        int slotFor(String key) {
            int found = find(key);
            if (found >= 0) {
                return found;
            }
            int i = bucket(key);
            if (keys[i] == null) {
                return i;
            }
            if (keys[i + 1] == null) {
                return i + 1;
            }
            return writesAt[i] <= writesAt[i + 1] ? i : i + 1;
        }
    }

    private volatile Slots slots = new Slots(INITIAL_SLOTS);
    /** This session's creates and deletes answered OK so far. */
    private long writes;

    private long lastCreateZxid = -1;
    private long lastCreateWrites;
    /**
     * The hint's bound: the creation zxid of this session's latest node whose create found an
     * uncounted transaction since the create before it. A record older than that has one in its
     * gap, most likely, and a record at or above it has none known.
     */
    private volatile long uncountedBefore;
    /** Records that could still save a read, pushed out by another parent's since the last growth. */
    private int evicted;

    /**
     * A create under the parent named {@code key} was answered OK with {@code czxid}. Returns
     * whether that node is proven alone under its parent (and then records it so).
     */
    boolean created(String key, long czxid) {
        long w = ++writes;
        if (lastCreateZxid < 0 || czxid - lastCreateZxid != w - lastCreateWrites) {
            uncountedBefore = czxid;
        }
        lastCreateZxid = czxid;
        lastCreateWrites = w;
        Slots s = slots;
        int i = s.find(key);
        boolean alone = false;
        if (i >= 0) {
            alone = s.states[i] == DELETED && czxid - s.zxids[i] == w - s.writesAt[i];
            s.keys[i] = null; // a node now lives under the parent: whatever was known of it is spent
        }
        if (alone) {
            put(key, czxid, w);
        }
        return alone;
    }

    /** The count of writes so far, the last one included: taken in a create's reply, for {@link #readAlone}. */
    long writes() {
        return writes;
    }

    /**
     * The node {@code czxid} under {@code key}, created when the count of writes was
     * {@code writesAt}, was the only child of its parent in the read pipelined after its create.
     */
    void readAlone(String key, long czxid, long writesAt) {
        put(key, czxid, writesAt);
    }

    /** A delete of the node {@code czxid} under {@code key} was answered OK. */
    void deleted(String key, long czxid) {
        writes++;
        Slots s = slots;
        int i = s.find(key);
        if (i >= 0 && s.zxids[i] == czxid && s.states[i] == ALONE) {
            s.states[i] = DELETED;
        }
    }

    /**
     * A hint, from any thread: whether a create under {@code key} is likely to be proven alone (its
     * record is deleted and no uncounted transaction is known since it was created).
     */
    boolean mayBeAlone(String key) {
        Slots s = slots;
        int i = s.find(key);
        return i >= 0 && s.states[i] == DELETED && s.zxids[i] >= uncountedBefore;
    }

    private void put(String key, long czxid, long writesAt) {
        Slots s = slots;
        int i = s.slotFor(key);
        String old = s.keys[i];
        if (old != null && s.states[i] == DELETED && !old.equals(key) && ++evicted > s.keys.length / 4) {
            s = grow(s);
            i = s.slotFor(key);
        }
        s.keys[i] = key;
        s.zxids[i] = czxid;
        s.writesAt[i] = writesAt;
        s.states[i] = ALONE;
    }

    private Slots grow(Slots s) {
        evicted = 0;
        if (s.keys.length >= MAX_SLOTS) {
            return s;
        }
        Slots bigger = new Slots(s.keys.length * 2);
        for (int j = 0; j < s.keys.length; j++) {
            String k = s.keys[j];
            if (k != null) {
                int i = bigger.slotFor(k);
                bigger.keys[i] = k;
                bigger.zxids[i] = s.zxids[j];
                bigger.writesAt[i] = s.writesAt[j];
                bigger.states[i] = s.states[j];
            }
        }
        slots = bigger;
        return bigger;
    }
}
