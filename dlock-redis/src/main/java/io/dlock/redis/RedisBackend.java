package io.dlock.redis;

import io.dlock.Capability;
import io.dlock.LockBackendException;
import io.dlock.LockOptions;
import io.dlock.spi.ConnectionState;
import io.dlock.spi.DataLossFence;
import io.dlock.spi.DataLossFences;
import io.dlock.spi.LockBackend;
import io.dlock.spi.LockInspector;
import io.dlock.spi.LockProtocol;
import io.dlock.spi.QueueEntry;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.RedisFuture;
import io.lettuce.core.RedisNoScriptException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.output.CommandOutput;
import io.lettuce.core.output.IntegerOutput;
import io.lettuce.core.output.NestedMultiOutput;
import io.lettuce.core.protocol.CommandArgs;
import io.lettuce.core.protocol.CommandType;
import io.lettuce.core.pubsub.RedisPubSubAdapter;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.lettuce.core.resource.ClientResources;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Lettuce connection to Redis (standalone, Sentinel or Cluster): one command connection for the
 * scripts and one pub/sub connection on which this client hears that one of its waiters may
 * proceed.
 *
 * <p>Concurrency: Lettuce reports connection changes on its I/O threads; they are handed to one
 * timer thread, so that dlock's listeners see them in order and never on an I/O thread. A drop
 * is SUSPENDED at once; the reconnect is reported only after this client's grants have been
 * checked on the server, each on its own: a grant that is gone is lost by itself (its next renewal
 * finds it gone) and the others stay valid, so the state is RECONNECTED; only when every grant
 * checked is gone (a restart without persistence, a failover to a replica that had not received
 * them) is it LOST, which invalidates every lease at once. An epoch counter drops a verdict that a
 * newer drop has overtaken.
 *
 * <p>Failure: connecting fails with {@link LockBackendException} within the connect timeout and
 * closes whatever it opened. After that, Lettuce reconnects on its own with the retry policy's
 * backoff, and commands wait for it up to the connect timeout. A connection that died without a
 * FIN or RST (a partition, a dead middlebox) is never noticed by Lettuce, which only times the
 * commands out; so a command timeout closes this client's channels, which makes Lettuce reconnect.
 */
final class RedisBackend implements LockBackend {
    private static final Logger log = LoggerFactory.getLogger(RedisBackend.class);
    static final String NAME = "redis";

    /** A script with its SHA-1, sent with EVALSHA and, after NOSCRIPT, with EVAL. */
    record Script(String text, String sha) {
        static Script of(String text) {
            return new Script(text, RedisScripts.sha1(text));
        }

        /** The SHA-1 as EVALSHA's first argument, encoded once. */
        byte[] shaBytes() {
            return SHA_BYTES.computeIfAbsent(sha, k -> k.getBytes(StandardCharsets.US_ASCII));
        }

        private static final Map<String, byte[]> SHA_BYTES = new ConcurrentHashMap<>();
    }

    static final Script ACQUIRE = Script.of(RedisScripts.ACQUIRE);
    static final Script RELEASE = Script.of(RedisScripts.RELEASE);
    static final Script RENEW = Script.of(RedisScripts.RENEW);
    static final Script HOLDS = Script.of(RedisScripts.HOLDS);

    private static final long READONLY_RECONNECT_GAP_NANOS = TimeUnit.MILLISECONDS.toNanos(500);

    final RedisUri uri;
    /** The data-loss fences this client's acquires ran into. */
    final DataLossFences fences = new DataLossFences(NAME, "slots");

    final LockOptions options;
    /** This client's id: the owner of its entries and the name of its wake-up channel. */
    final String clientId;

    final String channelPrefix;
    final ScheduledThreadPoolExecutor timer;
    private final @Nullable ClientResources resources;
    private final @Nullable AbstractRedisClient client;
    private final StatefulConnection<String, String> connection;
    private final RedisClusterAsyncCommands<String, String> commands;
    private final StatefulRedisPubSubConnection<String, String> pubsub;
    private final RedisLockProtocol protocol;
    private final Set<Capability> capabilities;
    private final Duration maxSuspension;

    /** Null for a user's client (its resources are not ours to customize). */
    private final RedisConnector.@Nullable Channels channels;
    /** The user's client this backend connects through, or null if it owns its client. */
    private final @Nullable RedisClient external;

    private final @Nullable RedisConnectionStateListener externalListener;
    private final List<Consumer<ConnectionState>> listeners = new CopyOnWriteArrayList<>();
    private final Set<Object> down = ConcurrentHashMap.newKeySet();
    private final AtomicLong epoch = new AtomicLong();
    private final AtomicBoolean suspended = new AtomicBoolean();
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean ready;

    private static final SecureRandom RANDOM = new SecureRandom();

    /**
     * A new client id: 96 random bits in 16 URL-safe Base64 characters (no space, no colon), which
     * every acquire sends as the owner; a UUID's 36 characters cost 20 bytes more per cycle.
     */
    static String newClientId() {
        byte[] b = new byte[12];
        RANDOM.nextBytes(b);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    /**
     * The connections' name ({@code CLIENT SETNAME}, sent in the handshake, so no command of a lock
     * cycle carries it): {@code dlock:<host>:<pid>:<client id>}, which {@code CLIENT LIST} shows and
     * {@link RedisInspector} reads to show a holder's host and pid.
     */
    static String clientName(String clientId) {
        return "dlock:" + HOST + ":" + ProcessHandle.current().pid() + ":" + clientId;
    }

    private static final String HOST = hostName();

    private static String hostName() {
        String host;
        try {
            host = java.net.InetAddress.getLocalHost().getHostName();
        } catch (java.io.IOException e) {
            host = System.getenv().getOrDefault("HOSTNAME", "unknown");
        }
        // A client name allows no spaces; a host name has no colon, but an odd one must not break parsing.
        return host.isBlank() ? "unknown" : host.replaceAll("[\\s:]", "_");
    }

    RedisBackend(
            String clientId,
            RedisUri uri,
            @Nullable ClientResources resources,
            @Nullable AbstractRedisClient client,
            StatefulConnection<String, String> connection,
            RedisClusterAsyncCommands<String, String> commands,
            StatefulRedisPubSubConnection<String, String> pubsub,
            ScheduledThreadPoolExecutor timer,
            RedisConnector.@Nullable Channels channels,
            @Nullable RedisClient external,
            @Nullable RedisConnectionStateListener externalListener) {
        this.clientId = clientId;
        this.uri = uri;
        this.channels = channels;
        this.external = external;
        this.externalListener = externalListener;
        this.options = uri.options();
        this.channelPrefix = uri.keyPrefix() + ":c:";
        this.resources = resources;
        this.client = client;
        this.connection = connection;
        this.commands = commands;
        this.pubsub = pubsub;
        this.timer = timer;
        // Grants outlive a drop by at least two thirds of the lease when renewed every third, and
        // isValid() checks each grant's own deadline; a third keeps the listeners' verdict early.
        this.maxSuspension = options.leaseTime().dividedBy(3);
        EnumSet<Capability> caps = EnumSet.of(
                Capability.EXCLUSIVE,
                Capability.FENCING_TOKENS,
                Capability.READ_WRITE,
                Capability.SEMAPHORE,
                Capability.MULTI_LOCK,
                Capability.LOST_DETECTION,
                Capability.CRASH_RELEASE,
                Capability.NO_HERD,
                Capability.RENEWAL);
        if (options.fair()) {
            caps.add(Capability.FAIR);
        }
        this.capabilities = Set.copyOf(caps);
        this.protocol = new RedisLockProtocol(this);
    }

    /**
     * How a message on a client's channel that tells it one of its grants was removed by force
     * ({@link RedisInspector#FORCE_RELEASE}) starts; the entry key follows.
     */
    static final String FORCED = "forced ";

    /** The engine's listener for grants removed by force; set once, before any lock is used. */
    volatile Consumer<QueueEntry> forcedListener = e -> {};

    /** Subscribes to this client's wake-up channel; the backend serves from then on. */
    void subscribe() {
        pubsub.addListener(new RedisPubSubAdapter<>() {
            @Override
            public void message(String channel, String message) {
                if (message.startsWith(FORCED)) {
                    protocol.onForced(message.substring(FORCED.length()));
                } else {
                    protocol.onWake(message);
                }
            }
        });
        pubsub.sync().subscribe(channelPrefix + clientId);
        ready = true;
    }

    // ---- connection state

    void onDisconnected(RedisChannelHandler<?, ?> handler) {
        if (external != null && handler != connection && handler != pubsub) {
            return; // one of the user's own connections
        }
        if (!ready || closed.get() || !handler.isOpen() && handler != connection) {
            return; // a connection closed on purpose (a stale cluster node) is no suspension
        }
        if (handler == pubsub) {
            return; // wake-ups may be missed: the waiters' timers cover that, and we kick them on reconnect
        }
        down.add(handler);
        if (suspended.compareAndSet(false, true)) {
            long e = epoch.incrementAndGet();
            emit(ConnectionState.SUSPENDED, e);
        }
    }

    void onConnected(RedisChannelHandler<?, ?> handler) {
        if (!ready || closed.get() || external != null && handler != connection && handler != pubsub) {
            return;
        }
        if (handler == pubsub) {
            protocol.kickAll();
            return;
        }
        down.remove(handler);
        if (!down.isEmpty() || !suspended.get()) {
            return;
        }
        long e = epoch.get();
        protocol.verifyGrants().whenComplete((verdict, err) -> {
            // The verdict is per grant: a grant that vanished is lost by itself, at its next renewal,
            // which finds it gone. Only when nothing checked survived (a server that lost its data)
            // is the whole client LOST at once, so that no lease outlives the restart it missed.
            boolean ok = err == null && !verdict.allGone();
            if (err != null) {
                log.warn("[client={}] could not check grants after reconnecting: {}", NAME, err.toString());
            } else if (!verdict.gone().isEmpty()) {
                log.warn(
                        "[client={}] {} of {} grant(s) vanished while disconnected (server restart or failover?): {}",
                        NAME,
                        verdict.gone().size(),
                        verdict.checked(),
                        verdict.gone().stream().map(g -> g.entry().key()).toList());
            }
            if (epoch.get() == e && suspended.compareAndSet(true, false)) {
                epoch.incrementAndGet();
                emit(ok ? ConnectionState.RECONNECTED : ConnectionState.LOST, e);
                protocol.kickAll();
            }
        });
    }

    private void emit(ConnectionState state, long e) {
        try {
            timer.execute(() -> {
                log.debug("[client={}] connection {} (epoch {})", NAME, state, e);
                for (Consumer<ConnectionState> l : listeners) {
                    l.accept(state);
                }
            });
        } catch (RejectedExecutionException ignored) {
            // closing
        }
    }

    // ---- commands

    /**
     * Runs a script, by SHA first and by text after NOSCRIPT (a restarted server, a new cluster
     * node). Never blocks.
     */
    <T> CompletableFuture<T> eval(Script script, ScriptOutputType type, String[] keys, String... args) {
        CompletableFuture<T> result = new CompletableFuture<>();
        try {
            commands.<T>evalsha(script.sha(), type, keys, args).whenComplete((value, error) -> {
                if (error == null) {
                    result.complete(value);
                } else if (error instanceof RedisNoScriptException
                        || String.valueOf(error.getMessage()).startsWith("NOSCRIPT")) {
                    commands.<T>eval(script.text(), type, keys, args).whenComplete((v2, e2) -> {
                        if (e2 == null) {
                            result.complete(v2);
                        } else {
                            result.completeExceptionally(onCommandFailure(e2));
                        }
                    });
                } else {
                    result.completeExceptionally(onCommandFailure(error));
                }
            });
        } catch (RuntimeException e) {
            result.completeExceptionally(e);
        }
        return result;
    }

    /**
     * Runs a script as {@link #eval} does, with arguments that are either {@code String}s or
     * {@code byte[]}s encoded once by the caller (a lock cycle's constants: the lease, the owner, the
     * client's constants), so that a cycle encodes only what changes. {@code output} makes a fresh
     * output per attempt. Never blocks.
     */
    <T> CompletableFuture<T> evalEncoded(
            Script script, Supplier<CommandOutput<String, String, T>> output, String[] keys, Object... args) {
        CompletableFuture<T> result = new CompletableFuture<>();
        try {
            commands.dispatch(CommandType.EVALSHA, output.get(), scriptArgs(script.shaBytes(), keys, args))
                    .whenComplete((value, error) -> {
                        if (error == null) {
                            result.complete(value);
                        } else if (error instanceof RedisNoScriptException
                                || String.valueOf(error.getMessage()).startsWith("NOSCRIPT")) {
                            try {
                                commands.dispatch(
                                                CommandType.EVAL,
                                                output.get(),
                                                scriptArgs(script.text().getBytes(StandardCharsets.UTF_8), keys, args))
                                        .whenComplete((v2, e2) -> {
                                            if (e2 == null) {
                                                result.complete(v2);
                                            } else {
                                                result.completeExceptionally(onCommandFailure(e2));
                                            }
                                        });
                            } catch (RuntimeException e) {
                                result.completeExceptionally(e);
                            }
                        } else {
                            result.completeExceptionally(onCommandFailure(error));
                        }
                    });
        } catch (RuntimeException e) {
            result.completeExceptionally(e);
        }
        return result;
    }

    private static CommandArgs<String, String> scriptArgs(byte[] head, String[] keys, Object[] args) {
        CommandArgs<String, String> out = new CommandArgs<>(StringCodec.UTF8);
        out.add(head).add(keys.length);
        for (String k : keys) {
            out.addKey(k);
        }
        for (Object a : args) {
            if (a instanceof byte[] b) {
                out.add(b);
            } else {
                out.add((String) a);
            }
        }
        return out;
    }

    /** A fresh output for a script that answers a list (or a lone integer, as a list of one). */
    static CommandOutput<String, String, List<Object>> multiOutput() {
        return new NestedMultiOutput<>(StringCodec.UTF8);
    }

    /** A fresh output for a script that answers an integer. */
    static CommandOutput<String, String, Long> integerOutput() {
        return new IntegerOutput<>(StringCodec.UTF8);
    }

    CompletableFuture<String> hget(String key, String field) {
        return read(() -> commands.hget(key, field));
    }

    CompletableFuture<String> get(String key) {
        return read(() -> commands.get(key));
    }

    private CompletableFuture<String> read(Supplier<RedisFuture<String>> command) {
        try {
            return command.get().toCompletableFuture().whenComplete((v, e) -> {
                if (e != null) {
                    onCommandFailure(e);
                }
            });
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * Called with every command failure: after a timeout the connection may be dead without Lettuce
     * knowing (no FIN, no RST), and every later command would time out too; closing the channels
     * makes Lettuce reconnect. The same for a {@code READONLY} reply through Sentinel: the node this
     * connection reached was demoted to a replica after a failover (a master that came back while
     * the Sentinel promoted another) and keeps the connection open, so every write would fail there
     * for good; a reconnect asks the Sentinel for the master again. Returns {@code error}.
     */
    private Throwable onCommandFailure(Throwable error) {
        Throwable cause = RedisLockProtocol.unwrap(error);
        boolean timeout = cause instanceof RedisCommandTimeoutException;
        boolean demoted = !timeout
                && uri.mode() == RedisUri.Mode.SENTINEL
                && String.valueOf(cause.getMessage()).startsWith("READONLY");
        if ((timeout || demoted) && channels != null && !closed.get()) {
            // After a demotion the Sentinel may still name the demoted node for a moment (its
            // failover under way): try again soon, not only after a connect timeout.
            int n = timeout ? channels.closeAll() : channels.closeAll(READONLY_RECONNECT_GAP_NANOS);
            if (n > 0) {
                log.warn(
                        "[client={}] {}; closed {} connection(s) to make them reconnect",
                        NAME,
                        timeout ? "a command timed out" : "the server is a replica now (READONLY)",
                        n);
            }
        }
        return error;
    }

    /**
     * Waits until {@code replicas} replicas have acknowledged every write this connection made so
     * far (Redis {@code WAIT}), at most {@code timeoutMs}; completes with how many did. Never blocks.
     * Standalone and Sentinel only: there every command goes over the one connection WAIT checks.
     */
    CompletableFuture<Long> waitForReplicas(int replicas, long timeoutMs) {
        try {
            return commands.waitForReplication(replicas, timeoutMs)
                    .toCompletableFuture()
                    .whenComplete((v, e) -> {
                        if (e != null) {
                            onCommandFailure(e);
                        }
                    });
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Schedules {@code task} on the timer thread; returns null if closing. */
    @Nullable
    ScheduledFuture<?> schedule(Runnable task, long delayMs) {
        try {
            return timer.schedule(task, Math.max(0, delayMs), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            return null;
        }
    }

    boolean isClosed() {
        return closed.get();
    }

    // ---- LockBackend

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Set<Capability> capabilities() {
        return capabilities;
    }

    @Override
    public LockProtocol protocol() {
        return protocol;
    }

    @Override
    public Optional<DataLossFence> dataLossFence() {
        return fences.current();
    }

    @Override
    public Optional<LockInspector> inspector() {
        return Optional.of(new RedisInspector(this));
    }

    /** The command connection, for {@link RedisInspector}'s reads. */
    RedisClusterAsyncCommands<String, String> commands() {
        return commands;
    }

    @Override
    public void onForcedRelease(Consumer<QueueEntry> listener) {
        forcedListener = listener;
    }

    @Override
    public void onConnectionState(Consumer<ConnectionState> listener) {
        listeners.add(listener);
    }

    @Override
    public Duration maxSuspension() {
        return maxSuspension;
    }

    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        protocol.close();
        if (external != null) {
            external.removeListener(externalListener);
        }
        RedisConnector.closeQuietly(pubsub, connection, client, resources, timer);
    }

    @Override
    public String toString() {
        return "RedisBackend[" + uri + ", client " + clientId + "]";
    }
}
