package io.dlock.redis;

import io.dlock.testkit.PrimitivesContract;
import java.util.List;

/** Read-write locks, semaphores, multi-locks and the non-reentrant mutex on Redis: the testkit's contract. */
class RedisPrimitivesIT extends RedisTestSupport implements PrimitivesContract {

    @Override
    public List<String> readWriteEntries(String lock) {
        return queue(server, prefix + ":{" + lock + "}:rw");
    }

    @Override
    public List<String> semaphoreEntries(String lock) {
        return queue(server, prefix + ":{" + lock + "}:s");
    }

    @Override
    public List<String> serverState() {
        return keys();
    }

    /** Deletes the lock's keys, as a lost write (a failover, a restart without persistence) would. */
    @Override
    public void dropHolder(String lock) {
        String[] keys = RedisLockProtocol.keys(prefix + ":{" + lock + "}:x");
        server.command("DEL", keys[0], keys[1], keys[2], keys[3]);
    }
}
