package io.dlock.redis;

import io.dlock.LockBackendException;
import io.dlock.LockOptions;
import io.dlock.RetryPolicy;
import io.lettuce.core.AbstractRedisClient;
import io.lettuce.core.ClientOptions;
import io.lettuce.core.RedisChannelHandler;
import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisConnectionStateListener;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SocketOptions;
import io.lettuce.core.SslVerifyMode;
import io.lettuce.core.TimeoutOptions;
import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.cluster.ClusterClientOptions;
import io.lettuce.core.cluster.RedisClusterClient;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import io.lettuce.core.codec.StringCodec;
import io.lettuce.core.pubsub.StatefulRedisPubSubConnection;
import io.lettuce.core.resource.ClientResources;
import io.lettuce.core.resource.Delay;
import io.lettuce.core.resource.NettyCustomizer;
import io.netty.channel.Channel;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Opens a {@link RedisBackend}: the Lettuce client, its connections and options for the URI's
 * mode (standalone, Sentinel, Cluster) or through a user's client, and clear errors when it cannot
 * (unreachable, wrong password, missing ACL permission, TLS refused).
 */
final class RedisConnector {
    private static final Logger log = LoggerFactory.getLogger(RedisConnector.class);

    private RedisConnector() {}

    /**
     * Connects to the server(s) of {@code uri} and subscribes to this client's wake-up channel.
     *
     * <p>Blocking: until connected, at most about the connect timeout per connection. On failure:
     * throws {@link LockBackendException} naming the hosts and the reason (unreachable, wrong
     * password, missing permission), with nothing left open.
     */
    static RedisBackend connect(RedisUri uri) {
        return retryLostHandshake(() -> connectOnce(uri));
    }

    private static RedisBackend connectOnce(RedisUri uri) {
        LockOptions options = uri.options();
        RetryPolicy retry = options.retryPolicy();
        Channels channels = new Channels(options.connectTimeout());
        ClientResources resources = ClientResources.builder()
                .nettyCustomizer(channels)
                .ioThreadPoolSize(2)
                .computationThreadPoolSize(1)
                .reconnectDelay(reconnectDelay(retry))
                .build();
        ScheduledThreadPoolExecutor timer = newTimer();
        @Nullable AbstractRedisClient client = null;
        @Nullable StatefulConnection<String, String> connection = null;
        @Nullable StatefulRedisPubSubConnection<String, String> pubsub = null;
        Holder holder = new Holder();
        try {
            SocketOptions socket = SocketOptions.builder()
                    .connectTimeout(options.connectTimeout())
                    .keepAlive(true)
                    .build();
            TimeoutOptions timeouts = TimeoutOptions.enabled(options.connectTimeout());
            String clientId = RedisBackend.newClientId();
            List<RedisURI> redisUris = redisUris(uri, RedisBackend.clientName(clientId));
            RedisClusterAsyncCommands<String, String> commands;
            if (uri.mode() == RedisUri.Mode.CLUSTER) {
                RedisClusterClient cluster = RedisClusterClient.create(resources, redisUris);
                client = cluster;
                cluster.setOptions(ClusterClientOptions.builder()
                        .socketOptions(socket)
                        .timeoutOptions(timeouts)
                        .autoReconnect(true)
                        .build());
                cluster.addListener(listener(holder));
                var c = cluster.connect(StringCodec.UTF8);
                connection = c;
                commands = c.async();
                pubsub = cluster.connectPubSub(StringCodec.UTF8);
            } else {
                RedisClient single = RedisClient.create(resources);
                client = single;
                single.setOptions(ClientOptions.builder()
                        .socketOptions(socket)
                        .timeoutOptions(timeouts)
                        .autoReconnect(true)
                        .build());
                single.addListener(listener(holder));
                var c = single.connect(StringCodec.UTF8, redisUris.get(0));
                connection = c;
                commands = c.async();
                pubsub = single.connectPubSub(StringCodec.UTF8, redisUris.get(0));
            }
            return start(
                    new RedisBackend(
                            clientId,
                            uri,
                            resources,
                            client,
                            connection,
                            commands,
                            pubsub,
                            timer,
                            channels,
                            null,
                            null),
                    holder);
        } catch (RuntimeException e) {
            closeQuietly(pubsub, connection, client, resources, timer);
            throw new LockBackendException(
                    null, RedisBackend.NAME, "cannot connect to " + uri.hostList() + ": " + describe(e, uri), e);
        }
    }

    /**
     * Connects through a user's {@link RedisClient} (standalone or Sentinel {@code target}): dlock
     * opens its own command and pub/sub connections with it, under the client's options and
     * resources, and never shuts the client down.
     *
     * <p>Blocking: until connected. On failure: throws {@link LockBackendException}; the user's
     * client stays as it was.
     */
    static RedisBackend connect(RedisClient external, RedisURI target, RedisUri uri) {
        return retryLostHandshake(() -> connectOnce(external, target, uri));
    }

    private static RedisBackend connectOnce(RedisClient external, RedisURI target, RedisUri uri) {
        ScheduledThreadPoolExecutor timer = newTimer();
        Holder holder = new Holder();
        RedisConnectionStateListener listener = listener(holder);
        StatefulConnection<String, String> connection = null;
        StatefulRedisPubSubConnection<String, String> pubsub = null;
        external.addListener(listener);
        try {
            var c = external.connect(StringCodec.UTF8, target);
            connection = c;
            pubsub = external.connectPubSub(StringCodec.UTF8, target);
            // The application's RedisURI names these connections (or not): dlock leaves its choice
            // alone, so inspect shows no host and pid for a handed-in client.
            String clientId = RedisBackend.newClientId();
            return start(
                    new RedisBackend(clientId, uri, null, null, c, c.async(), pubsub, timer, null, external, listener),
                    holder);
        } catch (RuntimeException e) {
            external.removeListener(listener);
            closeQuietly(pubsub, connection, null, null, timer);
            throw new LockBackendException(
                    null, RedisBackend.NAME, "cannot connect to " + uri.hostList() + ": " + describe(e, uri), e);
        }
    }

    /**
     * Runs {@code attempt} again, at most twice more, when Lettuce lost the reason of a failed
     * handshake: if the server answers the handshake with an error (a missing password) before
     * Lettuce's connect listener has run, the channel is already closed and Lettuce reports only
     * "RedisHandshakeHandler not registered". Seen on a loaded machine; a new attempt reports the
     * server's own error.
     */
    static RedisBackend retryLostHandshake(Supplier<RedisBackend> attempt) {
        for (int i = 1; ; i++) {
            try {
                return attempt.get();
            } catch (LockBackendException e) {
                if (i == LOST_HANDSHAKE_ATTEMPTS || !lostHandshake(e)) {
                    throw e;
                }
                log.debug(
                        "[client={}] connect attempt {} lost the handshake's reason; trying again",
                        RedisBackend.NAME,
                        i);
            }
        }
    }

    static final int LOST_HANDSHAKE_ATTEMPTS = 3;

    static boolean lostHandshake(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof IllegalStateException
                    && String.valueOf(t.getMessage()).contains("HandshakeHandler")) {
                return true;
            }
        }
        return false;
    }

    /** Subscribes to the wake-up channel and publishes the backend to its listener. */
    private static RedisBackend start(RedisBackend backend, Holder holder) {
        backend.subscribe();
        holder.backend = backend;
        log.debug("[client={}] connected to {} as client {}", RedisBackend.NAME, backend.uri, backend.clientId);
        return backend;
    }

    private static ScheduledThreadPoolExecutor newTimer() {
        ScheduledThreadPoolExecutor timer = new ScheduledThreadPoolExecutor(1, r -> {
            Thread t = new Thread(r, "dlock-redis-timer");
            t.setDaemon(true);
            return t;
        });
        timer.setRemoveOnCancelPolicy(true);
        return timer;
    }

    private static final class Holder {
        volatile @Nullable RedisBackend backend;
    }

    /**
     * The Netty channels of this client's connections, so that a command timeout can close them.
     * Thread-safe; at most one forced close per connect timeout, so a slow server is not hammered.
     */
    static final class Channels implements NettyCustomizer {
        private final Set<Channel> open = ConcurrentHashMap.newKeySet();
        private final long minGapNanos;
        private final AtomicLong lastClose = new AtomicLong(System.nanoTime() - Long.MAX_VALUE / 2);

        Channels(Duration connectTimeout) {
            this.minGapNanos = connectTimeout.toNanos();
        }

        @Override
        public void afterChannelInitialized(Channel channel) {
            open.add(channel);
            channel.closeFuture().addListener(f -> open.remove(channel));
        }

        /** Closes every open channel; Lettuce then reconnects them. Returns how many it closed. */
        int closeAll() {
            return closeAll(minGapNanos);
        }

        /** As {@link #closeAll()}, at most once per {@code gapNanos}. */
        int closeAll(long gapNanos) {
            long now = System.nanoTime();
            long last = lastClose.get();
            if (now - last < gapNanos || !lastClose.compareAndSet(last, now)) {
                return 0;
            }
            int n = 0;
            for (Channel c : open) {
                c.close();
                n++;
            }
            return n;
        }
    }

    private static RedisConnectionStateListener listener(Holder holder) {
        return new RedisConnectionStateListener() {
            @Override
            public void onRedisConnected(RedisChannelHandler<?, ?> connection, SocketAddress address) {
                RedisBackend b = holder.backend;
                if (b != null) {
                    b.onConnected(connection);
                }
            }

            @Override
            public void onRedisDisconnected(RedisChannelHandler<?, ?> connection) {
                RedisBackend b = holder.backend;
                if (b != null) {
                    b.onDisconnected(connection);
                }
            }
        };
    }

    private static List<RedisURI> redisUris(RedisUri uri, String clientName) {
        Duration timeout = uri.options().connectTimeout();
        SslVerifyMode verify =
                switch (uri.verifyPeer()) {
                    case "none" -> SslVerifyMode.NONE;
                    case "ca" -> SslVerifyMode.CA;
                    default -> SslVerifyMode.FULL;
                };
        if (uri.mode() == RedisUri.Mode.SENTINEL) {
            RedisUri.HostPort first = uri.hosts().get(0);
            RedisURI.Builder b = RedisURI.Builder.sentinel(first.host(), first.port(), uri.master());
            for (RedisUri.HostPort hp : uri.hosts().subList(1, uri.hosts().size())) {
                b.withSentinel(hp.host(), hp.port());
            }
            return List.of(finish(b, uri, timeout, verify, clientName));
        }
        return uri.hosts().stream()
                .map(hp -> finish(RedisURI.Builder.redis(hp.host(), hp.port()), uri, timeout, verify, clientName))
                .toList();
    }

    private static RedisURI finish(
            RedisURI.Builder b, RedisUri uri, Duration timeout, SslVerifyMode verify, String clientName) {
        b.withTimeout(timeout).withClientName(clientName);
        if (uri.database() != 0) {
            b.withDatabase(uri.database());
        }
        if (uri.tls()) {
            b.withSsl(true).withVerifyPeer(verify);
        }
        if (uri.password() != null) {
            if (uri.user() != null) {
                b.withAuthentication(uri.user(), uri.password());
            } else {
                b.withPassword(uri.password().toCharArray());
            }
        }
        return b.build();
    }

    /**
     * The smallest ACL command set dlock needs, tested by RedisAclIT and quoted in the README: the
     * scripts and what they call, HGET and GET (finding an entry whose reply was lost), SUBSCRIBE;
     * the handshake (HELLO with AUTH and SETNAME) needs no grant. EVAL runs only after NOSCRIPT;
     * WAIT only with {@code waitReplicas}.
     */
    static final String ACL_COMMANDS = "-@all +evalsha +eval +hget +subscribe +time +zadd +zrange +zrangebyscore"
            + " +zrank +zrem +zcard +zscore +hset +hmget +hdel +hincrby +del +pexpire +publish +exists +wait"
            + " +get +set +pttl";

    private static final java.util.regex.Pattern SCRIPT_REFUSAL = java.util.regex.Pattern.compile(
            "The user executing the script (can't .*?) script: ([0-9a-f]{40}), on @user_script:(\\d+)");
    private static final java.util.regex.Pattern SCRIPT_CALL =
            java.util.regex.Pattern.compile("redis\\.call\\('(\\w+)'");

    /**
     * For an ACL refusal, a hint that names what was refused and the ACL rule dlock needs; "" for
     * any other error. A refusal inside a script names only the script and line, so the command is
     * read from that line of the script's text.
     */
    static String aclHint(String message, String keyPrefix) {
        java.util.regex.Matcher script = SCRIPT_REFUSAL.matcher(message);
        String refused;
        if (script.find()) {
            String command = "an unknown command";
            int line = Integer.parseInt(script.group(3));
            for (RedisBackend.Script known :
                    List.of(RedisBackend.ACQUIRE, RedisBackend.RELEASE, RedisBackend.RENEW, RedisBackend.HOLDS)) {
                String[] lines = known.text().split("\n", -1);
                if (known.sha().equals(script.group(2)) && line >= 1 && line <= lines.length) {
                    java.util.regex.Matcher call = SCRIPT_CALL.matcher(lines[line - 1]);
                    command = call.find() ? call.group(1).toLowerCase(java.util.Locale.ROOT) : command;
                }
            }
            refused = "Redis ACL: dlock's script may not run '" + command + "' (" + script.group(1) + ")";
        } else if (message.startsWith("NOPERM")) {
            refused = "Redis ACL";
        } else {
            return "";
        }
        return " (" + refused + "; dlock's user needs: ~" + keyPrefix + ":* &" + keyPrefix + ":c:* " + ACL_COMMANDS
                + ")";
    }

    /** The reason a connect failed, from the cause chain, without the password. */
    private static String describe(Throwable e, RedisUri uri) {
        StringBuilder sb = new StringBuilder();
        for (Throwable t = e; t != null; t = t.getCause()) {
            String m = String.valueOf(t.getMessage());
            if (m.startsWith("WRONGPASS") || m.startsWith("NOAUTH") || m.contains("invalid password")) {
                return "authentication refused" + (uri.user() == null ? "" : " for user '" + uri.user() + "'") + " ("
                        + m + ")";
            }
            if (m.startsWith("NOPERM")) {
                return "permission denied (" + m + ")" + aclHint(m, uri.keyPrefix());
            }
            if (t instanceof javax.net.ssl.SSLException) {
                String trust = " needs the server's certificate to chain to a CA in the JVM's trust store";
                return "TLS handshake failed (" + m + ")"
                        + switch (uri.verifyPeer()) {
                            case "none" -> "";
                            case "ca" -> "; verifyPeer=ca" + trust + " (verifyPeer=none skips the check)";
                            default -> "; verifyPeer=full" + trust
                                    + " and to name the host (verifyPeer=none skips the check)";
                        };
            }
            if (sb.length() > 0) {
                sb.append(": ");
            }
            sb.append(t.getClass().getSimpleName()).append(' ').append(m);
        }
        String hint = !uri.tls() && sb.indexOf("Connection reset") >= 0
                ? " (the server closed the connection at once: if it serves TLS only, use rediss:// or tls=true)"
                : lostHandshake(e)
                        ? " (the server ended the connection during the handshake: does it need a password?)"
                        : uri.password() != null ? "" : " (is Redis running there?)";
        return sb + hint;
    }

    static void closeQuietly(
            @Nullable StatefulRedisPubSubConnection<String, String> pubsub,
            @Nullable StatefulConnection<String, String> connection,
            @Nullable AbstractRedisClient client,
            @Nullable ClientResources resources,
            ScheduledThreadPoolExecutor timer) {
        try {
            if (pubsub != null) {
                pubsub.close();
            }
            if (connection != null) {
                connection.close();
            }
        } catch (RuntimeException e) {
            log.debug("[client={}] closing connections: {}", RedisBackend.NAME, e.toString());
        } finally {
            try {
                if (client != null) {
                    client.shutdown(Duration.ZERO, Duration.ofSeconds(2));
                }
            } catch (RuntimeException e) {
                // An interrupted or failed client shutdown must not keep the resources' threads alive.
                log.debug("[client={}] shutting down: {}", RedisBackend.NAME, e.toString());
            } finally {
                try {
                    if (resources != null) {
                        resources.shutdown(0, 2, TimeUnit.SECONDS);
                    }
                } catch (RuntimeException e) {
                    log.debug("[client={}] shutting down resources: {}", RedisBackend.NAME, e.toString());
                } finally {
                    timer.shutdownNow();
                }
            }
        }
    }

    /**
     * The longest pause between two reconnect attempts, unless the retry policy's first sleep is
     * longer. After a server restart, the time until a client is back is part of how long the lock
     * stays unavailable: with the policy's default of doubling up to 5 s, a client whose server was
     * down 3.5 s came back up to 2.8 s after the server did, and the data-loss fence (a lease time
     * from the first acquire that finds the data gone) started only then. One connection attempt per
     * 250 ms per client costs the server nothing worth saving.
     */
    static final Duration RECONNECT_MAX_DELAY = Duration.ofMillis(250);

    /**
     * Lettuce's exponential back-off between the retry policy's sleeps, capped at {@link
     * #RECONNECT_MAX_DELAY} (or the first sleep, if longer); Lettuce refuses equal bounds
     * (retryMaxSleep = retryBaseSleep, which the options allow), so those become a 1 ms range.
     */
    static Delay reconnectDelay(RetryPolicy retry) {
        Duration lower = positive(retry.baseSleep());
        Duration cap = lower.compareTo(RECONNECT_MAX_DELAY) > 0 ? lower : RECONNECT_MAX_DELAY;
        Duration upper = positive(retry.maxSleep());
        if (upper.compareTo(cap) > 0) {
            upper = cap;
        }
        if (upper.compareTo(lower) <= 0) {
            upper = lower.plusMillis(1);
        }
        return Delay.exponential(lower, upper, 2, TimeUnit.MILLISECONDS);
    }

    private static Duration positive(Duration d) {
        return d.isZero() || d.isNegative() ? Duration.ofMillis(1) : d;
    }
}
