package io.dlock.jdbc;

/** The operator view (inspect, forced release, watch) on H2 (in-process): the testkit's contract and the SQL cases. */
class H2InspectIT extends H2TestSupport implements JdbcInspectCases {}
