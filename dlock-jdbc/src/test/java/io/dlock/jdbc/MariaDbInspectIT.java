package io.dlock.jdbc;

/** The operator view (inspect, forced release, watch) on MariaDB 10.11: the testkit's contract and the SQL cases. */
class MariaDbInspectIT extends MariaDbTestSupport implements JdbcInspectCases {}
