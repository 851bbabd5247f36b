package io.dlock.etcd;

import io.dlock.testkit.ElectionContract;

/** Leader election on etcd: the testkit's contract. */
class EtcdElectionIT extends EtcdTestSupport implements ElectionContract {}
