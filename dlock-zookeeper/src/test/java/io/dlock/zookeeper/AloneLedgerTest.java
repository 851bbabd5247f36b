package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/**
 * The ledger's proof, fed the replies a session would see: zxids as the ensemble would assign them
 * and this session's own creates and deletes in reply order.
 */
class AloneLedgerTest {

    /** A session's view: the next zxid of the ensemble, which other sessions may also take. */
    private long zxid = 100;

    private final AloneLedger ledger = new AloneLedger();

    /** A node created alone under {@code key} and read so; returns its czxid. */
    private long createdAndReadAlone(String key) {
        long czxid = ++zxid;
        assertThat(ledger.created(key, czxid)).isFalse();
        ledger.readAlone(key, czxid, ledger.writes());
        return czxid;
    }

    /** This session's delete of the node {@code czxid} under {@code key}, a transaction of its own. */
    private void deleted(String key, long czxid) {
        ledger.deleted(key, czxid);
        zxid++;
    }

    @Test
    void nextNode_afterTheDeleteOnly_isAlone() {
        long a = createdAndReadAlone("p");
        deleted("p", a);
        assertThat(ledger.mayBeAlone("p")).isTrue();
        assertThat(ledger.created("p", ++zxid)).isTrue();
    }

    @Test
    void ownWritesUnderOtherParents_inBetween_stillProveIt() {
        long a = createdAndReadAlone("p");
        long q = createdAndReadAlone("q");
        deleted("p", a);
        deleted("q", q);
        assertThat(ledger.created("r", ++zxid)).isFalse(); // nothing known of r
        assertThat(ledger.created("p", ++zxid)).isTrue();
    }

    @Test
    void anotherSessionsTransaction_inBetween_leavesItUnproven() {
        long a = createdAndReadAlone("p");
        long r = createdAndReadAlone("r");
        deleted("r", r);
        zxid++; // another session's write, anywhere in the ensemble
        deleted("p", a);
        assertThat(ledger.mayBeAlone("p")).isTrue(); // nothing uncounted seen yet
        assertThat(ledger.created("p", ++zxid)).isFalse();
        // The create saw the gap: the hint now says so for every record older than that create ...
        assertThat(ledger.mayBeAlone("r")).isFalse();
        // ... and not for one made after it.
        long q = createdAndReadAlone("q");
        deleted("q", q);
        assertThat(ledger.mayBeAlone("q")).isTrue();
        assertThat(ledger.created("q", ++zxid)).isTrue();
    }

    @Test
    void ownCreateUnderTheSameParent_inBetween_leavesItUnproven() {
        long a = createdAndReadAlone("p");
        long waiter = ++zxid; // another thread of this session queues under p
        assertThat(ledger.created("p", waiter)).isFalse();
        deleted("p", a);
        // Every transaction between was this session's, but the waiter still lives under p.
        assertThat(ledger.mayBeAlone("p")).isFalse();
        assertThat(ledger.created("p", ++zxid)).isFalse();
    }

    @Test
    void nodeNeverReadAlone_provesNothingAfterItsDelete() {
        long a = ++zxid;
        assertThat(ledger.created("p", a)).isFalse(); // its read showed a queue: no readAlone
        deleted("p", a);
        assertThat(ledger.created("p", ++zxid)).isFalse();
    }

    @Test
    void deleteOfAnotherNode_doesNotCountAsTheLoneNodesDelete() {
        long a = createdAndReadAlone("p");
        ledger.deleted("p", a - 1); // some older node of p, by its token
        zxid++;
        assertThat(ledger.created("p", ++zxid)).isFalse();
    }

    @Test
    void provenNode_provesTheNextInTurn() {
        long a = createdAndReadAlone("p");
        for (int i = 0; i < 5; i++) {
            deleted("p", a);
            a = ++zxid;
            assertThat(ledger.created("p", a)).isTrue();
        }
    }

    @Test
    void manyParents_tableGrows_andKeepsProvingThem() {
        int parents = 10_000;
        long[] nodes = new long[parents];
        for (int round = 0; round < 3; round++) {
            int proven = 0;
            for (int i = 0; i < parents; i++) {
                String key = "lock-" + i;
                long czxid = ++zxid;
                boolean alone = ledger.created(key, czxid);
                if (alone) {
                    proven++;
                } else {
                    ledger.readAlone(key, czxid, ledger.writes());
                }
                nodes[i] = czxid;
                deleted(key, czxid);
            }
            if (round == 0) {
                assertThat(proven).isZero();
            } else if (round == 2) {
                // 1,024 slots to start with would keep about a tenth of 10,000 parents.
                assertThat(proven).isGreaterThan(parents * 8 / 10);
            }
        }
    }
}
