package io.dlock.jdbc;

import io.dlock.testkit.ElectionContract;

/** Leader election on PostgreSQL: the testkit's contract. */
class PostgresElectionIT extends PostgresTestSupport implements ElectionContract {}
