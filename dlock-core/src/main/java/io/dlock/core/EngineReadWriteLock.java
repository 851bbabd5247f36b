package io.dlock.core;

import io.dlock.DistributedLock;
import io.dlock.DistributedReadWriteLock;

/** The two sides of a read-write lock; each is an {@link EngineLock} in its own mode. */
final class EngineReadWriteLock implements DistributedReadWriteLock {
    private final String name;
    private final DistributedLock read;
    private final DistributedLock write;

    EngineReadWriteLock(String name, DistributedLock read, DistributedLock write) {
        this.name = name;
        this.read = read;
        this.write = write;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public DistributedLock readLock() {
        return read;
    }

    @Override
    public DistributedLock writeLock() {
        return write;
    }

    @Override
    public String toString() {
        return "DistributedReadWriteLock[" + name + "]";
    }
}
