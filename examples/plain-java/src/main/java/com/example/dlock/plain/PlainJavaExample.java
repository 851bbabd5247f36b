package com.example.dlock.plain;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.testkit.EmbeddedZooKeeper;
import java.time.Duration;
import java.util.Optional;

/**
 * Takes one lock and prints its fencing token.
 *
 * <pre>{@code
 * java -cp ... com.example.dlock.plain.PlainJavaExample                                  # embedded ZooKeeper
 * java -cp ... com.example.dlock.plain.PlainJavaExample zookeeper://127.0.0.1:2181/myapp  # your ensemble
 * }</pre>
 *
 * <p>Exits 1 if the lock is not granted within 10 s or its fencing token is not positive.
 */
public final class PlainJavaExample {
    private PlainJavaExample() {}

    public static void main(String[] args) throws InterruptedException {
        int status;
        if (args.length > 0) {
            status = run(args[0]);
        } else {
            try (EmbeddedZooKeeper zk = EmbeddedZooKeeper.start()) {
                status = run(zk.uri("plain-java-example"));
            }
        }
        System.exit(status);
    }

    static int run(String uri) throws InterruptedException {
        try (LockClient client = LockClient.connect(uri)) {
            Optional<Lease> granted = client.lock("invoice-42").tryAcquire(Duration.ofSeconds(10));
            if (granted.isEmpty()) {
                System.err.println("lock 'invoice-42' not granted within 10 s");
                return 1;
            }
            try (Lease lease = granted.get()) {
                long token = lease.fencingToken();
                System.out.println("lock '" + lease.lockName() + "' held, fencing token " + token);
                // Pass the token with every write to the resource the lock guards; it refuses older tokens.
                return token > 0 ? 0 : 1;
            }
        }
    }
}
