package io.dlock.jdbc;

import io.dlock.testkit.PrimitivesContract;

/** Read-write locks, semaphores, multi-locks and the non-reentrant mutex on MariaDB 10.11: the testkit's contract. */
class MariaDbPrimitivesIT extends MariaDbTestSupport implements PrimitivesContract {}
