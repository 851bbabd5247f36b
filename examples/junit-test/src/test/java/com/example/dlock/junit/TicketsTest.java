package com.example.dlock.junit;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.dlock.LockClient;
import io.dlock.testkit.DlockServer;
import io.dlock.testkit.NewDeployment;
import io.dlock.testkit.RedisServer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** A user's test against a real Redis that the testkit starts (and stops) for this class. */
@DlockServer(DlockServer.Kind.REDIS)
class TicketsTest {
    static String uri;

    @BeforeAll
    static void server(RedisServer redis) {
        uri = redis.uri("tickets-test");
        NewDeployment.mark(uri); // a server this test started: its first lock is granted at once
    }

    @Test
    void sellOne_fourInstancesAtOnce_noSaleIsLost() throws Exception {
        int instances = 4;
        int salesEach = 25;
        // One client per "instance", as separate JVMs would have; they share only the Redis server.
        List<LockClient> clients = new ArrayList<>();
        ExecutorService pool = Executors.newFixedThreadPool(instances);
        try {
            Tickets.SoldCount count = new Tickets.SoldCount();
            List<Future<?>> done = new ArrayList<>();
            for (int i = 0; i < instances; i++) {
                LockClient client = LockClient.connect(uri);
                clients.add(client);
                Tickets instance = new Tickets(client, count);
                done.add(pool.submit(() -> {
                    for (int s = 0; s < salesEach; s++) {
                        instance.sellOne();
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
            assertEquals(1, count.maxInside(), "callers inside the lock at once");
            assertEquals(instances * salesEach, count.sold(), "tickets sold");
        } finally {
            pool.shutdownNow();
            clients.forEach(LockClient::close);
        }
    }
}
