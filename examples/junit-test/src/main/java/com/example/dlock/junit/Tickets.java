package com.example.dlock.junit;

import io.dlock.Lease;
import io.dlock.LockClient;

/**
 * The application code under test: sells tickets from a count kept outside the service (a database
 * row in real life), one sale at a time across every instance, by holding the lock {@code tickets}.
 */
public final class Tickets {
    private final LockClient locks;
    private final SoldCount count;

    public Tickets(LockClient locks, SoldCount count) {
        this.locks = locks;
        this.count = count;
    }

    public void sellOne() throws InterruptedException {
        try (Lease lease = locks.lock("tickets").acquire()) {
            count.increment();
        }
    }

    /**
     * Stands for the row: read, then written, with a gap between, so concurrent sellers lose sales
     * unless something keeps them apart. It also records how many callers were inside at once.
     */
    public static final class SoldCount {
        private int sold;
        private int inside;
        private int maxInside;

        void increment() throws InterruptedException {
            enter();
            try {
                int read = read();
                Thread.sleep(1); // the read-modify-write window that the lock closes
                write(read + 1);
            } finally {
                leave();
            }
        }

        public synchronized int sold() {
            return sold;
        }

        public synchronized int maxInside() {
            return maxInside;
        }

        private synchronized int read() {
            return sold;
        }

        private synchronized void write(int value) {
            sold = value;
        }

        private synchronized void enter() {
            inside++;
            maxInside = Math.max(maxInside, inside);
        }

        private synchronized void leave() {
            inside--;
        }
    }
}
