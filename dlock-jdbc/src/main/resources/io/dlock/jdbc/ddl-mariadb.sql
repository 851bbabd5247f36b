-- dlock-jdbc on MariaDB/MySQL (InnoDB). One row per lock name, kept after release so fencing tokens
-- never go down. expires_ms is the database clock in epoch milliseconds; NULL when free.
-- Names are compared byte for byte (ascii_bin): lock 'A' and lock 'a' are two locks, as elsewhere.
-- queued: 1 while a waiter row of the lock may stand (set by each waiter after it enqueues, cleared by
-- a grant that finds no other live waiter), so that a grant with no one waiting reads this row only.
CREATE TABLE IF NOT EXISTS dlock_locks (
  name       VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin PRIMARY KEY,
  owner      VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin,
  client     VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin,
  token      BIGINT NOT NULL,
  expires_ms BIGINT,
  holder     VARCHAR(255),
  queued     TINYINT NOT NULL DEFAULT 0
) ENGINE = InnoDB;
-- Queue entries in arrival order (seq); an entry whose expires_ms has passed no longer counts. Exclusive
-- locks (kind X) keep only their waiters here (the holder is the lock row); read-write locks (R, W) and
-- semaphores (S) keep holders (token > 0) and waiters (token 0), and their lock row, named 'rw/<name>'
-- or 's/<name>', only counts the tokens. holder: 'pid@host <database clock ms>' of the entry's client,
-- written at enqueue and again at grant. lease_ms: the waiting client's own leaseTime, which a release
-- that hands the lock to this waiter gives it (NULL in rows of older versions: the releaser's leaseTime).
-- Upgrading older tables: ALTER TABLE dlock_locks_waiters ADD COLUMN holder VARCHAR(255) and ADD COLUMN
-- lease_ms BIGINT, and ALTER TABLE dlock_locks ADD COLUMN queued TINYINT NOT NULL DEFAULT 0, each if
-- missing; older versions ignore the columns. Older clients do not set queued, so while both run a
-- newer client's first try can pass an older client's waiter: first-come order holds again once
-- every client is upgraded. Exclusion and fencing never depend on queued.
CREATE TABLE IF NOT EXISTS dlock_locks_waiters (
  seq         BIGINT AUTO_INCREMENT PRIMARY KEY,
  name        VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  acquisition VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL UNIQUE,
  client      VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
  expires_ms  BIGINT NOT NULL,
  kind        CHAR(1) CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'X',
  permits     INT NOT NULL DEFAULT 1,
  max_permits INT NOT NULL DEFAULT 1,
  token       BIGINT NOT NULL DEFAULT 0,
  holder      VARCHAR(255),
  lease_ms    BIGINT,
  KEY dlock_locks_waiters_name (name, seq),
  KEY dlock_locks_waiters_client (client)
) ENGINE = InnoDB;
