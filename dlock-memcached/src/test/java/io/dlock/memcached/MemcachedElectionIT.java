package io.dlock.memcached;

import io.dlock.testkit.ElectionContract;

/** Leader election on Memcached: the testkit's contract. */
class MemcachedElectionIT extends MemcachedTestSupport implements ElectionContract {}
