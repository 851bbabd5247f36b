package io.dlock.redis;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The Lua scripts behind every Redis lock operation, as constants.
 *
 * <p>Why scripts: Redis runs a script atomically (no other command interleaves), so purging expired
 * entries, deciding a grant, incrementing the fencing counter and setting the deadline happen as one
 * step, the way a compare-and-set would on a server that had one. Every script touches only the
 * four keys of one queue, which share one hash tag ({@code {name}}) and so one Cluster slot.
 *
 * <p>Data model, per lock name {@code N}, key prefix {@code P} and family {@code F} ({@code x}
 * exclusive, {@code rw} read-write, {@code s} semaphore), base key {@code P:{N}:F}:
 *
 * <ul>
 *   <li>{@code base:s} STRING: a lone holder, {@code "id mode permits owner token"}, with the lease
 *       as its PX expiry (the fast path below); when it exists the other three keys do not;
 *   <li>{@code base:q} ZSET: entry id → arrival sequence (the FIFO queue, holders and waiters);
 *   <li>{@code base:d} ZSET: entry id → deadline in server milliseconds (lease or waiter expiry);
 *   <li>{@code base:h} HASH: entry id → {@code "mode permits owner token"} (token 0 while waiting),
 *       plus {@code #seq} (arrival counter), {@code #fence} (last fencing token) and {@code #max}
 *       (a semaphore's total, which every client must agree on).
 * </ul>
 *
 * <p>Epoch marker, per key prefix ({@code P:epoch}; on a Cluster one per hash slot, {@code
 * P:{tag}:epoch} with a tag of the lock's slot, since a script may touch only its own slot): {@code
 * "=" + the highest fencing token granted under it} while the node's data is continuous, never
 * expiring. A server that lost its data (a restart without persistence or before its AOF was
 * fsynced, a flush, an eviction) has lost the marker with the grants, and the grants' holders may
 * still consider their leases valid for up to {@code leaseTime}. So the acquire script grants
 * nothing while the marker is missing or fenced: the first acquire that finds it missing writes
 * {@code "until start"} (server ms), a fence of its client's lease time, and waits; a client with a
 * longer lease extends the fence to the start plus its lease; the first acquire after {@code until}
 * writes {@code "=0"}. The fence starts at the server's own start when that was less than a lease
 * ago ({@code INFO server}'s uptime; an ACL user without {@code +info} cannot read it), else when the
 * missing marker is noticed. A missing marker is
 * never taken for a fresh server: a first deployment waits until a lease after the server started.
 *
 * <p>Expiry is lazy: each script first removes entries whose deadline has passed ({@code purge}).
 * The three keys always carry a PEXPIRE at least as late as the latest deadline, and are deleted
 * when the queue empties, so a crashed client leaves nothing behind for longer than its lease.
 *
 * <p>Fencing token: {@code max(#fence + 1, server time in microseconds, high-water + 1)}, and the
 * marker's high-water becomes it. The counter makes tokens strictly increase while a queue's keys
 * live; the high-water, shared by every lock under the prefix (or in the slot), keeps them
 * increasing after the keys were deleted (an idle lock) even if the server clock steps back or a
 * failover lands on a host whose clock lags (the replica has the high-water but for the grants it
 * also lacks); the clock, as a floor, keeps them increasing after the marker itself was lost, where
 * the fence puts a lease time between the old grants and the new ones.
 *
 * <p>Fast paths: an acquire that finds no keys at all (nobody holds or waits) and the epoch marker
 * set grants at once and records the lone holder in {@code base:s} alone, a single {@code SET … PX
 * lease}, besides the marker's new high-water, read and written by one {@code SET … GET}; releasing
 * it is a compare-and-delete and renewing it a compare-and-{@code PEXPIRE}, each before the script
 * defines anything it would not use. An uncontended cycle thus runs 6 commands inside Redis
 * (EXISTS, TIME, SET … GET, SET … PX; GET, DEL), 8 calls with the two EVALSHAs, against the bare
 * {@code SET NX} + compare-and-delete recipe's 4 (which has no fencing token); the 2 more are the
 * clock read that makes the token and the high-water that keeps it rising. Every other script first
 * turns a lone holder into an ordinary queue entry ({@code unsolo}), so the rest of the recipe sees
 * one data model.
 *
 * <p>Keys sent: a lock's scripts name only {@code base:s} (and the acquire script the epoch marker)
 * and derive {@code base:q}, {@code base:d} and {@code base:h} from it. They share its hash tag, so
 * a Cluster routes the call by {@code base:s} to the node that holds all four, and Redis runs
 * commands on undeclared keys of the script's own slot; sending the three names would cost about
 * 80 bytes a call. {@code SET … GET} needs Redis 6.2 or newer.
 *
 * <p>Wake-ups (no herd): after anything leaves a queue, {@code wake} walks it in order and
 * publishes the entry key of each waiter that may now be granted, and only those, on its owner
 * client's channel {@code P:c:<client id>}. The owner then claims the grant with the acquire script.
 */
final class RedisScripts {
    private RedisScripts() {}

    /** Status codes the acquire script returns in its first element. */
    static final long GRANTED = 1;

    static final long WAITING = 0;
    static final long MISSING = -1;
    static final long PERMITS_DIFFER = -2;

    /**
     * Shared prelude. It expects {@code s} (KEYS[1], the lone holder's key {@code base:s}), {@code
     * fair} ('1'/'0') and {@code chan} (the channel prefix) to be set by the script that includes it,
     * and derives the base key (also the prefix of the entry keys that wake-ups name) and the other
     * three keys from {@code s}: they share its hash tag, so they are in its Cluster slot, and the
     * client need not send their names with every call (see the class comment).
     */
    private static final String PRELUDE =
            """
            local base = string.sub(s, 1, -3)
            local q, d, h = base .. ':q', base .. ':d', base .. ':h'
            local nowMs, nowUs
            -- Reads the server clock; every script calls it before anything that needs the time.
            local function clock()
              local t = redis.call('TIME')
              nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
              nowUs = tonumber(t[1]) * 1000000 + tonumber(t[2])
            end

            local function parse(v)
              local m, p, o, tok = string.match(v, '^(%a) (%d+) (%S+) (%d+)$')
              return m, tonumber(p), o, tonumber(tok)
            end

            -- Turns a lone holder kept in s alone (the fast path) into an ordinary queue entry, so
            -- the code below sees one data model. While s exists the other keys do not.
            local function unsolo()
              local sv = redis.call('GET', s)
              if not sv then return end
              local sid, rec = string.match(sv, '^(%S+) (.+)$')
              local dl = nowMs + math.max(0, redis.call('PTTL', s))
              redis.call('DEL', s)
              redis.call('HSET', h, sid, rec, '#seq', 1, '#fence', string.match(rec, '(%d+)$'))
              redis.call('ZADD', q, 1, sid)
              redis.call('ZADD', d, dl, sid)
            end

            -- Removes entries whose deadline has passed; returns how many.
            local function purge()
              local gone = redis.call('ZRANGEBYSCORE', d, '-inf', nowMs)
              for _, id in ipairs(gone) do
                redis.call('ZREM', q, id)
                redis.call('ZREM', d, id)
                redis.call('HDEL', h, id)
              end
              return #gone
            end

            local function addHeld(held, m, p)
              if m == 'S' then held.S = held.S + p else held[m] = held[m] + 1 end
            end

            local function fits(held, m, p, maxp)
              if m == 'S' then return held.S + p <= maxp end
              if m == 'R' then return held.W == 0 and held.X == 0 end
              return held.X == 0 and held.W == 0 and held.R == 0 and held.S == 0
            end

            -- Publishes to the owners of waiting entries that may now be granted, in queue order,
            -- counting every granted entry first. Fair: stops at the first waiter that may not
            -- proceed (nobody overtakes it). Unfair: wakes every waiter that fits. Advisory only:
            -- the woken owner's acquire script decides.
            local function wake()
              local ids = redis.call('ZRANGE', q, 0, fair == '1' and 99 or -1)
              if #ids == 0 then return end
              local vals = redis.call('HMGET', h, unpack(ids))
              local maxp = tonumber(redis.call('HGET', h, '#max') or '0')
              local held = {X = 0, R = 0, W = 0, S = 0}
              for i, v in ipairs(vals) do
                if v then
                  local m, p, o, tok = parse(v)
                  if tok > 0 then addHeld(held, m, p) end
                end
              end
              for i, v in ipairs(vals) do
                if v then
                  local m, p, o, tok = parse(v)
                  if tok > 0 then
                    -- counted above
                  elseif fits(held, m, p, maxp) then
                    redis.pcall('PUBLISH', chan .. o, base .. '#' .. ids[i]) -- a hint: a refusal must not undo the grant above
                    addHeld(held, m, p)
                  elseif fair == '1' then
                    return
                  end
                end
              end
            end

            -- Deletes the queue when it is empty; otherwise makes the keys outlive the latest deadline.
            local function finish()
              if redis.call('ZCARD', q) == 0 then
                redis.call('DEL', q, d, h)
                return
              end
              local last = redis.call('ZRANGE', d, -1, -1, 'WITHSCORES')
              local ttl = math.max(1, tonumber(last[2]) - nowMs + 1000)
              redis.call('PEXPIRE', q, ttl)
              redis.call('PEXPIRE', d, ttl)
              redis.call('PEXPIRE', h, ttl)
            end
            """;

    /**
     * Enqueues (or finds again) an entry and grants it if it may proceed; also the waiter's check
     * and heartbeat. Atomic, so two clients can never both see the lock free.
     *
     * <p>KEYS: 1 s (the lone holder's key, {@code base:s}), 2 the epoch marker.
     *
     * <p>ARGV: 1 id, 2 mode (X/R/W/S), 3 lease ms, 4 owner client id, 5 this client's constants
     * {@code "<fair 1|0> <waiter ttl ms> <channel prefix>"}, and only when they differ from the
     * defaults (permits 1, max permits 1, create, no write entry to overlook): 6 {@code "<permits>
     * <max permits> <create 1|0>"}, 7 the id of this thread's own write entry that does not block a
     * read.
     *
     * <p>Returns the token alone when the fast path granted a lone holder; otherwise {status, token,
     * wait ms, predecessor id}: {1, token, 0, ''} granted (a retried
     * request for an entry already granted returns its token and extends it); {0, 0, ms, pred}
     * waiting, where ms is how long until the first blocker's deadline or the end of the epoch
     * fence (then without a predecessor, and a fifth element: the fence's remaining ms, which the
     * client reports as a {@link io.dlock.spi.DataLossFence}); {-1, 0, 0, ''} the entry
     * is gone; {-2, recorded total, 0, ''} the semaphore is in use with another total.
     */
    static final String ACQUIRE =
            """
            local s, mk = KEYS[1], KEYS[2]
            local id, mode, lease, owner = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
            local permits, maxp, create = 1, 1, '1'
            if ARGV[6] then
              local p, mx, c = string.match(ARGV[6], '^(%d+) (%d+) ([01])$')
              permits, maxp, create = tonumber(p), tonumber(mx), c
            end
            -- Fast path: no keys at all (nobody holds or waits, and no counter survives), so this new
            -- entry is granted at once with the clock as its token, kept in s alone.
            -- The epoch marker must say that this node's data is continuous ('=' and the high-water
            -- token; see fence below); the token must exceed it, and becomes it. The marker is read
            -- and written in one SET ... GET; a marker that turns out not to say '=' is put back.
            if create == '1' and mode ~= 'S' and redis.call('EXISTS', s, string.sub(s, 1, -2) .. 'q') == 0 then
              local t = redis.call('TIME')
              local us = t[2] -- padded to 6 digits by hand: string.format costs a microsecond here
              if #us < 6 then us = string.sub('00000' .. us, -6) end
              local ts = t[1] .. us
              local mv = redis.call('SET', mk, '=' .. ts, 'GET')
              if mv and string.byte(mv) == 61 then
                local hw = tonumber(string.sub(mv, 2))
                if tonumber(ts) <= hw then -- the clock went back
                  ts = string.format('%.0f', hw + 1)
                  redis.call('SET', mk, '=' .. ts)
                end
                redis.call('SET', s, id .. ' ' .. mode .. ' ' .. permits .. ' ' .. owner .. ' ' .. ts, 'PX', lease)
                return tonumber(ts)
              end
              if mv then redis.call('SET', mk, mv) else redis.call('DEL', mk) end
            end
            local fair, waiter, chan = string.match(ARGV[5], '^([01]) (%d+) (.*)$')
            """
                    + PRELUDE
                    + """
            lease, waiter = tonumber(lease), tonumber(waiter)
            local despite = ARGV[7] or ''
            -- How many ms grants must still wait because this node may have lost grants that are still
            -- valid, and the high-water token; 0 once the marker says its data is continuous. A missing
            -- or unreadable marker means lost data (a restart without persistence, a flush, an
            -- eviction): the fence starts now and lasts this client's lease; a client with a longer
            -- lease extends it, counted from the fence's start, while it lasts. A server that started
            -- less than a lease ago counts it from its start instead: no grant it lost can outlive
            -- the restart by more than a lease. Redis computes uptime as the difference of two whole
            -- seconds (the cached clock's and the start's, each rounded down), so it may exceed the
            -- true uptime by almost a second: one second less keeps the estimated start late, never
            -- early.
            local function fence()
              local v = redis.call('GET', mk)
              if v and string.byte(v) == 61 then return 0, tonumber(string.sub(v, 2)) or 0 end
              local untilMs, startMs
              if v then
                local u, st = string.match(v, '^(%d+) (%d+)$')
                untilMs, startMs = tonumber(u), tonumber(st)
              end
              if not untilMs or not startMs then
                startMs = nowMs
                -- pcall: an ACL user without +info only loses the earlier start.
                local info = redis.pcall('INFO', 'server')
                local up = type(info) == 'string' and tonumber(string.match(info, 'uptime_in_seconds:(%d+)'))
                if up and up >= 1 and (up - 1) * 1000 < lease then startMs = nowMs - (up - 1) * 1000 end
                untilMs = startMs + lease
              else
                untilMs = math.max(untilMs, startMs + lease)
              end
              if untilMs <= nowMs then
                redis.call('SET', mk, '=0')
                return 0, 0
              end
              redis.call('SET', mk, string.format('%.0f %.0f', untilMs, startMs))
              return untilMs - nowMs, 0
            end
            clock()
            unsolo()
            local removed = purge()
            local function done(result)
              if removed > 0 then wake() end
              finish()
              return result
            end
            local v = redis.call('HGET', h, id)
            if not v then
              if create ~= '1' then return done({-1, 0, 0, ''}) end
              if mode == 'S' then
                local rec = redis.call('HGET', h, '#max')
                if rec and tonumber(rec) ~= maxp then return done({-2, tonumber(rec), 0, ''}) end
                if not rec then redis.call('HSET', h, '#max', maxp) end
              end
              local seq = redis.call('HINCRBY', h, '#seq', 1)
              redis.call('ZADD', q, seq, id)
              v = mode .. ' ' .. permits .. ' ' .. owner .. ' 0'
              redis.call('HSET', h, id, v)
            end
            local m, p, o, tok = parse(v)
            if tok > 0 then
              redis.call('ZADD', d, nowMs + lease, id)
              return done({1, tok, 0, ''})
            end
            -- Who counts against this entry: every granted entry, wherever it stands (so safety
            -- never depends on queue order), and in fair mode also every entry ahead of it. A read
            -- under this thread's own granted write lock (a downgrade) overtakes queued writers.
            local ids = redis.call('ZRANGE', q, 0, -1)
            local rank = redis.call('ZRANK', q, id)
            local downgrade = false
            if m == 'R' and despite ~= '' then
              local dv = redis.call('HGET', h, despite)
              downgrade = dv ~= false and dv ~= nil and select(4, parse(dv)) > 0
            end
            local blocking = {}
            local used = 0
            if #ids > 1 then
              local vals = redis.call('HMGET', h, unpack(ids))
              for i, ov in ipairs(vals) do
                if ov and ids[i] ~= id then
                  local om, op, oo, otok = parse(ov)
                  local ahead = fair == '1' and i - 1 < rank and not downgrade
                  if otok > 0 or ahead then
                    if m == 'S' then
                      used = used + op
                      table.insert(blocking, ids[i])
                    elseif m ~= 'R' or (om == 'W' and ids[i] ~= despite) then
                      table.insert(blocking, ids[i])
                    end
                  end
                end
              end
            end
            local free
            if m == 'S' then free = used + p <= maxp else free = #blocking == 0 end
            local fenced, hw = 0, 0
            if free then fenced, hw = fence() end
            if free and fenced == 0 then
              local token = math.max(tonumber(redis.call('HGET', h, '#fence') or '0') + 1, nowUs, hw + 1)
              local ts = string.format('%.0f', token)
              redis.call('SET', mk, '=' .. ts)
              redis.call('HSET', h, '#fence', ts)
              redis.call('HSET', h, id, m .. ' ' .. p .. ' ' .. o .. ' ' .. ts)
              redis.call('ZADD', d, nowMs + lease, id)
              return done({1, token, 0, ''})
            end
            redis.call('ZADD', d, nowMs + waiter, id)
            local waitMs = waiter
            if fenced > 0 then waitMs = math.min(waitMs, fenced) end
            for _, b in ipairs(blocking) do
              local dl = redis.call('ZSCORE', d, b)
              if dl then waitMs = math.min(waitMs, tonumber(dl) - nowMs) end
            end
            if fenced > 0 then return done({0, 0, math.max(1, waitMs), blocking[#blocking] or '', fenced}) end
            return done({0, 0, math.max(1, waitMs), blocking[#blocking]})
            """;

    /**
     * Removes an entry (held or waiting) and wakes whoever may proceed now. Atomic, so the wake-up
     * is decided on the queue as it is after the removal.
     *
     * <p>KEYS: 1 s. ARGV: 1 id, 2 the client's constants (as the acquire script's ARGV 5). Returns 1
     * if the entry existed.
     */
    static final String RELEASE =
            """
            local s = KEYS[1]
            -- Fast path: a lone holder (nobody to wake); if it is another entry, this one is nowhere.
            local sv = redis.call('GET', s)
            if sv then
              if string.sub(sv, 1, #ARGV[1] + 1) ~= ARGV[1] .. ' ' then return 0 end
              redis.call('DEL', s)
              return 1
            end
            local fair, waiter, chan = string.match(ARGV[2], '^([01]) (%d+) (.*)$')
            """
                    + PRELUDE
                    + """
            clock()
            purge()
            local existed = redis.call('HDEL', h, ARGV[1])
            redis.call('ZREM', q, ARGV[1])
            redis.call('ZREM', d, ARGV[1])
            wake()
            finish()
            return existed
            """;

    /**
     * Extends a granted entry's deadline if it still holds the grant with the same token. Purges
     * first, so an entry whose lease already ran out is reported lost, never revived.
     *
     * <p>KEYS: 1 s. ARGV: 1 id, 2 token, 3 lease ms, 4 the client's constants (as the acquire
     * script's ARGV 5). Returns 1 if extended, 0 if the grant is gone.
     */
    static final String RENEW =
            """
            local s = KEYS[1]
            -- Fast path: a lone holder stays one; if it is another entry, this one is gone.
            local sv = redis.call('GET', s)
            if sv then
              local sid, stok = string.match(sv, '^(%S+) .* (%d+)$')
              if sid ~= ARGV[1] or stok ~= ARGV[2] then return 0 end
              redis.call('PEXPIRE', s, ARGV[3])
              return 1
            end
            local fair, waiter, chan = string.match(ARGV[4], '^([01]) (%d+) (.*)$')
            """
                    + PRELUDE
                    + """
            clock()
            local removed = purge()
            local result = 0
            local v = redis.call('HGET', h, ARGV[1])
            if v then
              local m, p, o, tok = parse(v)
              if tok == tonumber(ARGV[2]) and tok > 0 then
                redis.call('ZADD', d, nowMs + tonumber(ARGV[3]), ARGV[1])
                result = 1
              end
            end
            if removed > 0 then wake() end
            finish()
            return result
            """;

    /**
     * Reports whether a grant still exists with its token and an unexpired deadline; read-only.
     * Used after a reconnect to tell a brief disconnect from a server that lost its data.
     *
     * <p>KEYS: d, h, s. ARGV: 1 id, 2 token. Returns 1 if the grant is intact, else 0.
     */
    static final String HOLDS =
            """
            local sv = redis.call('GET', KEYS[3])
            if sv then
              local sid, stok = string.match(sv, '^(%S+) .* (%d+)$')
              if sid == ARGV[1] and stok == ARGV[2] then return 1 end
              return 0
            end
            local t = redis.call('TIME')
            local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
            local v = redis.call('HGET', KEYS[2], ARGV[1])
            if not v then return 0 end
            local tok = tonumber(string.match(v, ' (%d+)$'))
            local dl = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]) or '0')
            if tok == tonumber(ARGV[2]) and dl > nowMs then return 1 end
            return 0
            """;

    /** The SHA-1 of a script, as EVALSHA wants it. */
    static String sha1(String script) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-1");
            return HexFormat.of().formatHex(md.digest(script.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-1 is required by every Java platform", e);
        }
    }
}
