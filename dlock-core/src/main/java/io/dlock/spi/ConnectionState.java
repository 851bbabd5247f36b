package io.dlock.spi;

/**
 * A backend connection's health, translated once per backend from its client library's events
 * (Curator's vocabulary). The engine decides from these when leases stop being valid.
 */
public enum ConnectionState {
    /** Connected for the first time. */
    CONNECTED,
    /** The connection dropped; the session or leases may still be alive on the server. */
    SUSPENDED,
    /** Connected again within the same session or lease lifetime: grants survived. */
    RECONNECTED,
    /** The session or leases are gone (expired, or suspended for too long): every grant is lost. */
    LOST
}
