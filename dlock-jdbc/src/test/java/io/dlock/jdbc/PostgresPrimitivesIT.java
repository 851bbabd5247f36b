package io.dlock.jdbc;

import io.dlock.testkit.PrimitivesContract;

/** Read-write locks, semaphores, multi-locks and the non-reentrant mutex on PostgreSQL 15: the testkit's contract. */
class PostgresPrimitivesIT extends PostgresTestSupport implements PrimitivesContract {}
