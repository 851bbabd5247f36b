package io.dlock.jdbc;

import io.dlock.DistributedLockException;

/**
 * A fenced write was refused: the resource's guard row already records a higher fencing token, so
 * the lease this write was made under has passed to someone else. Roll the transaction back.
 *
 * <p>Thread-safety: immutable.
 */
public final class StaleTokenException extends DistributedLockException {
    private static final long serialVersionUID = 1L;

    private final String resource;
    private final long token;

    StaleTokenException(String resource, long token) {
        super(
                null,
                JdbcBackend.NAME,
                "fenced write to resource '" + resource + "' refused: token " + token
                        + " is older than the one already recorded; roll the transaction back",
                null);
        this.resource = resource;
        this.token = token;
    }

    /**
     * The resource whose write was refused.
     *
     * @return the resource name
     */
    public String resource() {
        return resource;
    }

    /**
     * The refused (stale) token.
     *
     * @return the token
     */
    public long token() {
        return token;
    }
}
