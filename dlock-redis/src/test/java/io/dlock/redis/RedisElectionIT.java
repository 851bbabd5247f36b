package io.dlock.redis;

import io.dlock.testkit.ElectionContract;

/** Leader election on a standalone Redis: the testkit's contract. */
class RedisElectionIT extends RedisTestSupport implements ElectionContract {}
