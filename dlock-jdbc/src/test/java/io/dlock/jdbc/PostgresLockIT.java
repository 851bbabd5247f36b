package io.dlock.jdbc;

import io.dlock.testkit.ExclusiveLockContract;

/** The exclusive lock on PostgreSQL 15 through the public API: the testkit's contract. */
class PostgresLockIT extends PostgresTestSupport implements ExclusiveLockContract {}
