package io.dlock.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.dlock.LockBackendException;
import io.dlock.LockOptions;
import io.dlock.spi.BackendUri;
import io.dlock.spi.Position;
import io.dlock.spi.QueueEntry;
import io.dlock.testkit.FaultProxy;
import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.curator.CuratorZookeeperClient;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.ZooDefs;
import org.junit.jupiter.api.Test;

/** The recipe's recovery rules, driven through the SPI directly. */
class ZooKeeperLockProtocolIT extends ZooKeeperTestSupport {

    private ZooKeeperBackend backend() {
        BackendUri uri = BackendUri.parse(URI.create(uri("sessionTimeout=10s")), LockOptions.defaults(), Set.of());
        return track(ZooKeeperBackend.connect(ZooKeeperUri.from(uri)));
    }

    @Test
    void findOwnEntry_nodeOfThisSession_isAdoptedWithItsToken() throws Exception {
        ZooKeeperBackend backend = backend();
        String id = UUID.randomUUID().toString();
        // What a create whose reply was lost leaves behind: a node of ours the client never heard of.
        backend.curator.create().creatingParentContainersIfNeeded().forPath("/" + namespace + "/adopt");
        String created = backend.zk()
                .create(
                        "/" + namespace + "/adopt/" + LockNodes.prefix(id),
                        new byte[0],
                        ZooDefs.Ids.OPEN_ACL_UNSAFE,
                        CreateMode.EPHEMERAL_SEQUENTIAL);
        Optional<QueueEntry> found = backend.protocol()
                .findOwnEntry("adopt", id)
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
        assertThat(found).isPresent();
        // An exclusive entry's key is its node's sequence; the node's name follows from it and the id.
        String name = created.substring(created.lastIndexOf('/') + 1);
        assertThat(found.get().key())
                .isEqualTo(name.substring(LockNodes.prefix(id).length()));
        assertThat(LockNodes.nodeName(found.get())).isEqualTo(name);
        assertThat(found.get().token())
                .isEqualTo(backend.zk().exists(created, false).getCzxid());
        assertThat(found.get().session()).isEqualTo(backend.zk().getSessionId());
    }

    @Test
    void findOwnEntry_sameIdFromAnotherSession_isNotAdopted() throws Exception {
        ZooKeeperBackend mine = backend();
        ZooKeeperBackend other = backend();
        String id = UUID.randomUUID().toString();
        Position theirs = other.protocol()
                .enqueue(io.dlock.spi.LockRequest.exclusive("foreign", id))
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
        assertThat(theirs.isGranted()).isTrue();
        assertThat(children("foreign")).hasSize(1);
        // A node carrying our acquisition id but owned by another session (for example one that is
        // expiring) must never be taken as ours: that is how two Curator clients once held one lock.
        Optional<QueueEntry> found = mine.protocol()
                .findOwnEntry("foreign", id)
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
        assertThat(found).isEmpty();
    }

    @Test
    void enqueue_afterParentRemoved_recreatesParentAndGrants() throws Exception {
        ZooKeeperBackend backend = backend();
        String id = UUID.randomUUID().toString();
        Position first = backend.protocol()
                .enqueue(io.dlock.spi.LockRequest.exclusive("fresh", id))
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
        assertThat(first.isGranted()).isTrue();
        assertThat(first.grant().fencingToken())
                .isEqualTo(backend.zk()
                        .exists("/" + namespace + "/fresh/" + LockNodes.nodeName(first.entry()), false)
                        .getCzxid());
        backend.protocol().release(first.entry()).toCompletableFuture().get(10, TimeUnit.SECONDS);
        assertThat(children("fresh")).isEmpty();
        backend.zk().delete("/" + namespace + "/fresh", -1);
        Position second = backend.protocol()
                .enqueue(io.dlock.spi.LockRequest.exclusive(
                        "fresh", UUID.randomUUID().toString()))
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
        assertThat(second.isGranted()).isTrue();
        assertThat(second.grant().fencingToken()).isGreaterThan(first.grant().fencingToken());
        backend.protocol().release(second.entry()).toCompletableFuture().get(10, TimeUnit.SECONDS);
    }

    @Test
    void connect_uriSessionTimeout_overridesOptionsAndSetsSuspensionBound() {
        LockOptions options = LockOptions.builder()
                .sessionTimeout(java.time.Duration.ofSeconds(30))
                .build();
        BackendUri uri = BackendUri.parse(URI.create(uri("sessionTimeout=4s")), options, Set.of());
        ZooKeeperBackend backend = track(ZooKeeperBackend.connect(ZooKeeperUri.from(uri)));
        assertThat(backend.zk().getSessionTimeout()).isEqualTo(4000);
        assertThat(backend.maxSuspension())
                .isEqualTo(java.time.Duration.ofMillis(4000).dividedBy(6));
    }

    @Test
    void release_twice_isHarmless() throws Exception {
        ZooKeeperBackend backend = backend();
        Position p = backend.protocol()
                .enqueue(io.dlock.spi.LockRequest.exclusive(
                        "twice", UUID.randomUUID().toString()))
                .toCompletableFuture()
                .get(10, TimeUnit.SECONDS);
        backend.protocol().release(p.entry()).toCompletableFuture().get(10, TimeUnit.SECONDS);
        backend.protocol().release(p.entry()).toCompletableFuture().get(10, TimeUnit.SECONDS);
        assertThat(children("twice")).isEmpty();
    }

    @Test
    void uncontendedCycle_repliesArriveOnTheIoThread_notTheEventThread() throws Exception {
        ZooKeeperBackend backend = backend();
        assertThat(backend.zk()).isInstanceOf(DirectZooKeeper.class);
        String caller = Thread.currentThread().getName();
        // A stage completed before its callback is attached runs the callback on the caller: such
        // a cycle says nothing (a loaded machine can delay the caller past the reply), so cycles
        // repeat until both replies were seen on another thread, and every other thread seen must
        // be ZooKeeper's I/O thread, "<name>-SendThread(host:port)", never "<name>-EventThread".
        List<String> enqueuedOn = new ArrayList<>();
        List<String> releasedOn = new ArrayList<>();
        for (int cycle = 0;
                cycle < 50 && !(seenOffCaller(enqueuedOn, caller) && seenOffCaller(releasedOn, caller));
                cycle++) {
            CompletableFuture<String> enqueued = new CompletableFuture<>();
            CompletableFuture<String> released = new CompletableFuture<>();
            Position p = backend.protocol()
                    .enqueue(io.dlock.spi.LockRequest.exclusive(
                            "direct", UUID.randomUUID().toString()))
                    .whenComplete(
                            (x, e) -> enqueued.complete(Thread.currentThread().getName()))
                    .toCompletableFuture()
                    .get(10, TimeUnit.SECONDS);
            assertThat(p.isGranted()).isTrue();
            assertThat(p.grant().fencingToken())
                    .isEqualTo(backend.zk()
                            .exists("/" + namespace + "/direct/" + LockNodes.nodeName(p.entry()), false)
                            .getCzxid());
            backend.protocol()
                    .release(p.entry())
                    .whenComplete(
                            (x, e) -> released.complete(Thread.currentThread().getName()))
                    .toCompletableFuture()
                    .get(10, TimeUnit.SECONDS);
            enqueuedOn.add(enqueued.get(10, TimeUnit.SECONDS));
            releasedOn.add(released.get(10, TimeUnit.SECONDS));
        }
        assertThat(seenOffCaller(enqueuedOn, caller))
                .as("enqueue replies seen on: %s", enqueuedOn)
                .isTrue();
        assertThat(seenOffCaller(releasedOn, caller))
                .as("release replies seen on: %s", releasedOn)
                .isTrue();
        assertThat(enqueuedOn).allMatch(t -> t.equals(caller) || t.contains("-SendThread("), "caller or I/O thread");
        assertThat(releasedOn).allMatch(t -> t.equals(caller) || t.contains("-SendThread("), "caller or I/O thread");
        assertThat(children("direct")).isEmpty();
    }

    private static boolean seenOffCaller(List<String> threads, String caller) {
        return threads.stream().anyMatch(t -> !t.equals(caller));
    }

    @Test
    void directRequest_onAClosedHandle_isAnsweredWithAnErrorOnTheCallersThread() throws Exception {
        ZooKeeperBackend backend = backend();
        DirectZooKeeper zk = (DirectZooKeeper) backend.zk();
        zk.close();
        java.util.concurrent.atomic.AtomicInteger code = new java.util.concurrent.atomic.AtomicInteger();
        java.util.concurrent.atomic.AtomicReference<Thread> thread =
                new java.util.concurrent.atomic.AtomicReference<>();
        zk.delete("/" + namespace + "/none", "none", 1, (rc, unused) -> {
            code.set(rc);
            thread.set(Thread.currentThread());
        });
        // Queued on a closed handle: answered at once, before the send returns, as a lost session.
        assertThat(thread.get()).isSameAs(Thread.currentThread());
        assertThat(org.apache.zookeeper.KeeperException.Code.get(code.get()))
                .isEqualTo(org.apache.zookeeper.KeeperException.Code.SESSIONEXPIRED);
    }

    @Test
    void directRequest_handlerThatThrows_doesNotDropTheConnection() throws Exception {
        ZooKeeperBackend backend = backend();
        DirectZooKeeper zk = (DirectZooKeeper) backend.zk();
        long session = zk.getSessionId();
        java.util.concurrent.CountDownLatch ran = new java.util.concurrent.CountDownLatch(1);
        zk.getChildren("/", (rc, children) -> {
            ran.countDown();
            throw new IllegalStateException("a handler's bug");
        });
        assertThat(ran.await(10, TimeUnit.SECONDS)).isTrue();
        // Thrown into ZooKeeper's I/O thread it would have closed the connection: the next request
        // is answered on the same session, without a reconnect.
        java.util.concurrent.CompletableFuture<List<String>> next = new java.util.concurrent.CompletableFuture<>();
        zk.getChildren("/", (rc, children) -> next.complete(children));
        assertThat(next.get(10, TimeUnit.SECONDS)).contains("zookeeper");
        assertThat(zk.getSessionId()).isEqualTo(session);
        assertThat(zk.getState()).isEqualTo(org.apache.zookeeper.ZooKeeper.States.CONNECTED);
    }

    /**
     * The deadlock that TortureIT found: a reply of a lost connection, run on the I/O thread, asked
     * Curator for the handle while Curator's event thread, holding its connection state, was closing
     * that handle and waiting for the I/O thread to send the close. Here a test thread holds the
     * connection state as that closer did; the reply must not wait for it.
     */
    @Test
    void replyOnTheIoThread_whileCuratorsConnectionStateIsHeld_failsFastInsteadOfWaiting() throws Exception {
        FaultProxy proxy = FaultProxy.start(server.port());
        BackendUri uri = BackendUri.parse(
                URI.create("zookeeper://" + proxy.connectString() + "/" + namespace + "?sessionTimeout=10s"),
                LockOptions.defaults(),
                Set.of());
        ZooKeeperBackend backend = track(ZooKeeperBackend.connect(ZooKeeperUri.from(uri)));
        DirectZooKeeper zk = (DirectZooKeeper) backend.zk();
        CuratorZookeeperClient client = backend.curator.getZookeeperClient();
        proxy.close(); // the connection is reset and every reconnect refused
        await().atMost(10, TimeUnit.SECONDS).until(() -> !client.isConnected());
        java.lang.reflect.Field field = CuratorZookeeperClient.class.getDeclaredField("state");
        field.setAccessible(true);
        Object connectionState = field.get(client);
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        Thread closer = new Thread(() -> {
            synchronized (connectionState) {
                held.countDown();
                try {
                    letGo.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        closer.start();
        try {
            assertThat(held.await(10, TimeUnit.SECONDS)).isTrue();
            CompletableFuture<Object> seen = new CompletableFuture<>();
            // Queued while disconnected: the next refused reconnect answers it on the I/O thread.
            zk.getChildren("/", (rc, children) -> {
                try {
                    seen.complete(backend.zk());
                } catch (LockBackendException e) {
                    seen.complete(e);
                }
            });
            assertThat(seen.get(10, TimeUnit.SECONDS))
                    .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.type(LockBackendException.class))
                    .extracting(Throwable::getMessage)
                    .asString()
                    .contains("I/O thread");
        } finally {
            letGo.countDown();
            closer.join(10_000);
        }
    }
}
