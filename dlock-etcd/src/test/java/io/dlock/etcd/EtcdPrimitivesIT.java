package io.dlock.etcd;

import io.dlock.testkit.PrimitivesContract;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Read-write locks, semaphores, multi-locks and the non-reentrant mutex on etcd: the testkit's contract. */
class EtcdPrimitivesIT extends EtcdTestSupport implements PrimitivesContract {

    @Override
    public List<String> readWriteEntries(String lock) {
        return keys(prefix + "//" + lock + "/rw/");
    }

    @Override
    public List<String> semaphoreEntries(String lock) {
        return keys(prefix + "//" + lock + "/s/");
    }

    @Override
    public List<String> serverState() {
        return lockKeys();
    }

    /** Deletes the holder's key, as a revoked or expired lease would. */
    @Override
    public void dropHolder(String lock) throws Exception {
        String holder = entries(lock).get(0);
        inspector.getKVClient().delete(bytes(holder)).get(10, TimeUnit.SECONDS);
    }
}
