package io.dlock.spi;

/**
 * One acquisition's place in a backend's queue.
 *
 * @param lockName the lock's name, as validated by the engine
 * @param acquisitionId a random identifier unique to this acquisition, embedded in the backend
 *     entry so that the client can find its own entry again after a reply was lost
 * @param key the backend's address of the entry (a znode path, a key, a row id)
 * @param session the backend session that owns the entry (ZooKeeper session id), or 0 where
 *     entries are not tied to a session
 * @param token the fencing token the entry will carry when granted, where the backend fixes it at
 *     enqueue (ZooKeeper: the node's creation zxid), else 0
 */
public record QueueEntry(String lockName, String acquisitionId, String key, long session, long token) {}
