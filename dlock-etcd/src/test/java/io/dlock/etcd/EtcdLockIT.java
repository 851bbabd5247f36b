package io.dlock.etcd;

import io.dlock.testkit.ExclusiveLockContract;

/** The exclusive lock on a single etcd member, through the public API: the testkit's contract. */
class EtcdLockIT extends EtcdTestSupport implements ExclusiveLockContract {}
