-- dlock-jdbc on PostgreSQL. One row per lock name, kept after release so fencing tokens never go down.
-- expires_ms is the database clock in epoch milliseconds (now()); NULL when free.
-- fillfactor leaves room for HOT updates: grants, renewals and releases touch no indexed column.
CREATE TABLE IF NOT EXISTS dlock_locks (
  name       VARCHAR(255) PRIMARY KEY,
  owner      VARCHAR(64),
  client     VARCHAR(64),
  token      BIGINT NOT NULL,
  expires_ms BIGINT,
  holder     VARCHAR(255)
) WITH (fillfactor = 50);
-- Queue entries in arrival order (seq); an entry whose expires_ms has passed no longer counts. Exclusive
-- locks (kind X) keep only their waiters here (the holder is the lock row); read-write locks (R, W) and
-- semaphores (S) keep holders (token > 0) and waiters (token 0), and their lock row, named 'rw/<name>'
-- or 's/<name>', only counts the tokens. holder: 'pid@host <database clock ms>' of the entry's client,
-- written at enqueue and again at grant. lease_ms: the waiting client's own leaseTime, which a release
-- that hands the lock to this waiter gives it (NULL in rows of older versions: the releaser's leaseTime).
-- Upgrading an older table: ALTER TABLE dlock_locks_waiters ADD COLUMN holder VARCHAR(255) and ADD COLUMN
-- lease_ms BIGINT, each if missing; older versions ignore both columns.
CREATE TABLE IF NOT EXISTS dlock_locks_waiters (
  seq         BIGSERIAL PRIMARY KEY,
  name        VARCHAR(255) NOT NULL,
  acquisition VARCHAR(64) NOT NULL UNIQUE,
  client      VARCHAR(64) NOT NULL,
  expires_ms  BIGINT NOT NULL,
  kind        CHAR(1) NOT NULL DEFAULT 'X',
  permits     INT NOT NULL DEFAULT 1,
  max_permits INT NOT NULL DEFAULT 1,
  token       BIGINT NOT NULL DEFAULT 0,
  holder      VARCHAR(255),
  lease_ms    BIGINT
);
CREATE INDEX IF NOT EXISTS dlock_locks_waiters_name ON dlock_locks_waiters (name, seq);
CREATE INDEX IF NOT EXISTS dlock_locks_waiters_client ON dlock_locks_waiters (client);
