package io.dlock.zookeeper;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.jute.Record;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException.Code;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.data.ACL;
import org.apache.zookeeper.proto.Create2Response;
import org.apache.zookeeper.proto.CreateRequest;
import org.apache.zookeeper.proto.DeleteRequest;
import org.apache.zookeeper.proto.GetChildrenRequest;
import org.apache.zookeeper.proto.GetChildrenResponse;
import org.apache.zookeeper.proto.ReplyHeader;
import org.apache.zookeeper.proto.RequestHeader;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A ZooKeeper handle (made by Curator through {@link #factory()}) that can answer the uncontended
 * cycle's three requests (create, the pipelined {@code getChildren}, delete) on the client's I/O
 * thread instead of its event thread.
 *
 * <p>Why: ZooKeeper's callback API hands every reply from the I/O thread to the event thread, which
 * then wakes the caller: two thread wake-ups per reply where the blocking API has one. On an
 * uncontended cycle that hop was a measured part of dlock's client CPU over the protocol floor
 * (BENCHMARKS.md, issue 21). ZooKeeper calls a request's {@link ZooKeeper.WatchRegistration} on the
 * I/O thread, with the reply read and its error code set, before it queues the request for the
 * event thread; a request sent here carries no callback and a registration that delivers the reply
 * instead of registering a watch (none of these requests sets one). Every way a request ends goes
 * through that point: a reply, a connection loss ({@code CONNECTIONLOSS}), a closed session, a
 * request queued on a closed handle (then on the caller's thread, before the send returns).
 *
 * <p>Threads: a {@link Reply} runs on ZooKeeper's I/O thread (or the sender's, as above), in the
 * order the server answered; it must be short and never block, or it would hold up every reply and
 * ping of the session; nor may it call into Curator, see {@link #replying()}. An exception it
 * throws is logged and swallowed (thrown into the I/O thread it would drop the connection). Requests and watches sent through the ordinary API still answer on
 * the event thread; nothing here orders them against those.
 *
 * <p>The OK replies of its creates and deletes also feed its session's {@link AloneLedger}, which
 * lets the uncontended cycle skip the read when this session's own writes prove a new node alone.
 *
 * <p>Only for handles without a chroot in the connect string (dlock's {@code zookeeper://} URI
 * names the namespace as a path prefix, never a chroot): paths go to the server as given.
 */
final class DirectZooKeeper extends ZooKeeper {
    private static final Logger log = LoggerFactory.getLogger(DirectZooKeeper.class);
    private static final Watcher NO_WATCHER = event -> {};

    /** What a request's reply is handed to; runs on ZooKeeper's I/O thread. */
    @FunctionalInterface
    interface Reply<T> {
        /**
         * @param rc ZooKeeper's result code ({@link Code#OK} and the rest)
         * @param result the response, or null unless {@code rc} is OK
         */
        void done(int rc, @Nullable T result);
    }

    private static final ThreadLocal<Boolean> REPLYING = ThreadLocal.withInitial(() -> false);

    /**
     * Whether the current thread is running a {@link Reply} (ZooKeeper's I/O thread, or a sender's
     * thread as the class comment says). Such code must not wait for anything, and in particular
     * must not take Curator's connection-state lock: the thread holding it may be closing this very
     * handle, waiting for its I/O thread to send the close (a deadlock seen under torture: a reply
     * of a connection loss swept leftover nodes through {@code CuratorZookeeperClient.getZooKeeper()}
     * while the event thread handled the session's expiry).
     */
    static boolean replying() {
        return REPLYING.get();
    }

    /** This handle's (one session's) own writes; used on its I/O thread, where OK replies arrive. */
    private final AloneLedger ledger = new AloneLedger();

    DirectZooKeeper(String connectString, int sessionTimeout, Watcher watcher, boolean canBeReadOnly)
            throws IOException {
        super(connectString, sessionTimeout, watcher, canBeReadOnly);
    }

    DirectZooKeeper(
            String connectString, int sessionTimeout, Watcher watcher, boolean canBeReadOnly, ZKClientConfig config)
            throws IOException {
        super(connectString, sessionTimeout, watcher, canBeReadOnly, config);
    }

    /** Curator's factory for these handles (with or without a client configuration). */
    static org.apache.curator.utils.ZookeeperFactory factory() {
        return new org.apache.curator.utils.ZookeeperFactory() {
            @Override
            public ZooKeeper newZooKeeper(
                    String connectString, int sessionTimeout, Watcher watcher, boolean canBeReadOnly)
                    throws IOException {
                return new DirectZooKeeper(connectString, sessionTimeout, watcher, canBeReadOnly);
            }

            @Override
            public ZooKeeper newZooKeeper(
                    String connectString,
                    int sessionTimeout,
                    Watcher watcher,
                    boolean canBeReadOnly,
                    @Nullable ZKClientConfig config)
                    throws IOException {
                return config == null
                        ? new DirectZooKeeper(connectString, sessionTimeout, watcher, canBeReadOnly)
                        : new DirectZooKeeper(connectString, sessionTimeout, watcher, canBeReadOnly, config);
            }
        };
    }

    /** What a create's reply is handed to; runs on ZooKeeper's I/O thread. */
    @FunctionalInterface
    interface CreateReply {
        /**
         * @param rc ZooKeeper's result code
         * @param result the created node's path and stat, or null unless {@code rc} is OK
         * @param writes this session's count of writes with this one (see {@link AloneLedger#writes})
         * @param alone whether the node is proven alone under its parent ({@link AloneLedger})
         */
        void done(int rc, @Nullable Create2Response result, long writes, boolean alone);
    }

    /**
     * {@code create2} of a node under the parent that {@code parentKey} names (one name per parent
     * for this handle's whole life). Never blocks; the reply says whether this handle's own writes
     * prove the node alone ({@link AloneLedger}).
     */
    void create(String path, String parentKey, byte[] data, List<ACL> acl, CreateMode mode, CreateReply reply) {
        Create2Response response = new Create2Response();
        send(
                ZooDefs.OpCode.create2,
                new CreateRequest(path, data, acl, mode.toFlag()),
                response,
                path,
                (rc, unused) -> {
                    if (rc == Code.OK.intValue()) {
                        boolean alone =
                                ledger.created(parentKey, response.getStat().getCzxid());
                        reply.done(rc, response, ledger.writes(), alone);
                    } else {
                        reply.done(rc, null, 0, false);
                    }
                });
    }

    /**
     * Records that the node {@code czxid} under {@code parentKey}, whose create's reply counted
     * {@code writes}, was its parent's only child in the read pipelined after that create. Only from
     * that read's reply.
     */
    void readAlone(String parentKey, long czxid, long writes) {
        ledger.readAlone(parentKey, czxid, writes);
    }

    /** A hint, from any thread: whether a create under {@code parentKey} is likely proven alone. Never blocks. */
    boolean mayBeAlone(String parentKey) {
        return ledger.mayBeAlone(parentKey);
    }

    /** {@code getChildren} without a watch. Never blocks. */
    void getChildren(String path, Reply<List<String>> reply) {
        GetChildrenResponse response = new GetChildrenResponse();
        send(
                ZooDefs.OpCode.getChildren,
                new GetChildrenRequest(path, false),
                response,
                path,
                (rc, unused) -> reply.done(rc, rc == Code.OK.intValue() ? response.getChildren() : null));
    }

    /** {@code delete} of any version of the node {@code czxid} under {@code parentKey}. Never blocks. */
    void delete(String path, String parentKey, long czxid, Reply<Void> reply) {
        send(ZooDefs.OpCode.delete, new DeleteRequest(path, -1), null, path, (rc, unused) -> {
            if (rc == Code.OK.intValue()) {
                ledger.deleted(parentKey, czxid);
            }
            reply.done(rc, null);
        });
    }

    private void send(int type, Record request, @Nullable Record response, String path, Reply<Void> reply) {
        RequestHeader header = new RequestHeader();
        header.setType(type);
        cnxn.queuePacket(
                header, new ReplyHeader(), request, response, null, path, path, null, new Delivery(path, reply));
    }

    /** Delivers the reply where ZooKeeper would register a watch (see the class comment). */
    private static final class Delivery extends WatchRegistration {
        private final Reply<Void> reply;

        Delivery(String path, Reply<Void> reply) {
            super(NO_WATCHER, path);
            this.reply = reply;
        }

        @Override
        public void register(int rc) {
            boolean nested = REPLYING.get();
            REPLYING.set(true);
            try {
                reply.done(rc, null);
            } catch (RuntimeException | Error e) {
                if (e instanceof VirtualMachineError) {
                    throw e;
                }
                log.error("a ZooKeeper reply's handler failed", e);
            } finally {
                if (!nested) {
                    REPLYING.set(false);
                }
            }
        }

        @Override
        protected Map<String, Set<Watcher>> getWatches(int rc) {
            return Map.of();
        }
    }
}
