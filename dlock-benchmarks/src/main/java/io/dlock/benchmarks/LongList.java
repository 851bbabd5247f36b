package io.dlock.benchmarks;

import java.util.Arrays;

/**
 * A growable array of {@code long}, so that recording a sample in the measured loop allocates only
 * when the array doubles. Thread-safety: none; one per thread.
 */
final class LongList {
    private long[] data;
    private int size;

    LongList(int capacity) {
        data = new long[Math.max(16, capacity)];
    }

    void add(long value) {
        if (size == data.length) {
            data = Arrays.copyOf(data, size * 2);
        }
        data[size++] = value;
    }

    int size() {
        return size;
    }

    long get(int i) {
        return data[i];
    }

    long[] toArray() {
        return Arrays.copyOf(data, size);
    }

    void addAll(long[] values) {
        for (long v : values) {
            add(v);
        }
    }
}
