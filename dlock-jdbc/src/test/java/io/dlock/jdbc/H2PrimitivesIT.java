package io.dlock.jdbc;

import io.dlock.testkit.PrimitivesContract;

/** Read-write locks, semaphores, multi-locks and the non-reentrant mutex on H2 (in-process, over its TCP server): the testkit's contract. */
class H2PrimitivesIT extends H2TestSupport implements PrimitivesContract {}
