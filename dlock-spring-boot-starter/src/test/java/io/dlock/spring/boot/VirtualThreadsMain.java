package io.dlock.spring.boot;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.spring.boot.annotation.DistributedLocks;
import io.dlock.spring.boot.autoconfigure.DLockAutoConfiguration;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Run by {@link VirtualThreadsIT} in a child JVM of JDK 21 or newer (compiled to Java 17 bytecode,
 * so virtual threads are reached through method handles): {@value #THREADS} virtual threads call a
 * {@code @DistributedLock} method, and as many take a lock directly, on the Redis at {@code args[0]},
 * while JFR records every {@code jdk.VirtualThreadPinned} event with its stack. Prints one {@code
 * RESULT} line for the test to check, then the stacks of pins with a dlock frame.
 */
public final class VirtualThreadsMain {
    static final int THREADS = 1000;
    private static final String PINNED = "jdk.VirtualThreadPinned";
    private static final Duration DEADLINE = Duration.ofSeconds(120);

    private VirtualThreadsMain() {}

    @Configuration(proxyBeanMethods = false)
    @ImportAutoConfiguration(DLockAutoConfiguration.class)
    static class App {
        @Bean
        Counter counter() {
            return new Counter();
        }
    }

    /**
     * The annotated bean; its plain fields are guarded only by the distributed lock. Read them
     * through the methods: the bean is a class proxy whose own fields are not the target's.
     */
    public static class Counter {
        long value;
        long lastToken;
        int tokenViolations;
        final AtomicInteger inside = new AtomicInteger();
        final AtomicInteger maxInside = new AtomicInteger();
        final AtomicInteger onVirtual = new AtomicInteger();

        @io.dlock.spring.boot.annotation.DistributedLock(key = "'vt-counter'", waitTime = "120s")
        public void increment() throws Throwable {
            int now = inside.incrementAndGet();
            maxInside.accumulateAndGet(now, Math::max);
            if (isVirtual(Thread.currentThread())) {
                onVirtual.incrementAndGet();
            }
            long token = DistributedLocks.currentLease().fencingToken();
            if (token <= lastToken) {
                tokenViolations++;
            }
            lastToken = token;
            long read = value;
            Thread.yield(); // a virtual thread yields its carrier: another one may run here
            value = read + 1;
            inside.decrementAndGet();
        }

        public String summary() {
            return "counter=" + value + " virtual=" + onVirtual.get() + " maxInside=" + maxInside.get()
                    + " tokenViolations=" + tokenViolations;
        }
    }

    /** Initialized on a virtual thread, blocking in its initializer: JDK 24+ still pins there. */
    static final class PinsInItsInitializer {
        static final long AT;

        static {
            try {
                Thread.sleep(30);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            AT = System.nanoTime();
        }

        private PinsInItsInitializer() {}
    }

    private static final MethodHandle IS_VIRTUAL;
    private static final MethodHandle NEW_VIRTUAL_EXECUTOR;

    static {
        MethodHandles.Lookup lookup = MethodHandles.publicLookup();
        try {
            IS_VIRTUAL = lookup.findVirtual(Thread.class, "isVirtual", MethodType.methodType(boolean.class));
            NEW_VIRTUAL_EXECUTOR = lookup.findStatic(
                    Executors.class, "newVirtualThreadPerTaskExecutor", MethodType.methodType(ExecutorService.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(
                    "virtual threads need JDK 21 or newer, this is " + Runtime.version() + ": " + e);
        }
    }

    static boolean isVirtual(Thread t) throws Throwable {
        return (boolean) IS_VIRTUAL.invoke(t);
    }

    public static void main(String[] args) throws Throwable {
        String uri = args[0];
        Recording recording = new Recording();
        recording.enable(PINNED).withThreshold(Duration.ZERO).withStackTrace();
        recording.start();

        ConfigurableApplicationContext ctx = new SpringApplicationBuilder(App.class)
                .web(WebApplicationType.NONE)
                .properties("dlock.uri=" + uri, "spring.main.banner-mode=off")
                .run();
        long direct;
        Counter counter = ctx.getBean(Counter.class);
        try {
            LockClient client = ctx.getBean(LockClient.class);
            DistributedLock lock = client.lock("vt-direct");
            long[] directValue = {0};
            // Once on this platform thread, so that one-time class loading is not taken for pinning.
            counter.increment();
            try (Lease lease = lock.acquire()) {
                directValue[0]++;
            }

            ExecutorService virtual = (ExecutorService) NEW_VIRTUAL_EXECUTOR.invoke();
            List<Future<?>> calls = new ArrayList<>();
            try {
                calls.add(virtual.submit(() -> PinsInItsInitializer.AT));
                for (int i = 0; i < THREADS; i++) {
                    calls.add(virtual.submit(() -> {
                        try {
                            counter.increment();
                        } catch (Throwable e) {
                            throw new IllegalStateException(e);
                        }
                        return null;
                    }));
                    calls.add(virtual.submit(() -> {
                        try (Lease lease = lock.tryAcquire(DEADLINE).orElseThrow()) {
                            long read = directValue[0];
                            Thread.yield();
                            directValue[0] = read + 1;
                        }
                        return null;
                    }));
                }
                long deadline = System.nanoTime() + DEADLINE.toNanos();
                for (Future<?> f : calls) {
                    f.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                }
            } finally {
                virtual.shutdownNow();
                if (!virtual.awaitTermination(30, TimeUnit.SECONDS)) {
                    System.out.println("virtual threads still running after 30 s");
                }
            }
            direct = directValue[0];
        } finally {
            ctx.close();
        }

        recording.stop();
        Path file = Files.createTempFile("dlock-virtual-threads-", ".jfr");
        int pinned = 0;
        int control = 0;
        List<String> byDlock = new ArrayList<>();
        try {
            recording.dump(file);
            recording.close();
            for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
                if (!e.getEventType().getName().equals(PINNED)) {
                    continue;
                }
                pinned++;
                List<RecordedFrame> frames = e.getStackTrace() == null
                        ? List.of()
                        : e.getStackTrace().getFrames();
                boolean isControl = false;
                boolean isDlock = false;
                for (RecordedFrame f : frames) {
                    String type = f.getMethod().getType().getName();
                    if (type.startsWith(PinsInItsInitializer.class.getName())) {
                        isControl = true;
                    } else if (type.startsWith("io.dlock.") && !type.startsWith(VirtualThreadsMain.class.getName())) {
                        isDlock = true;
                    }
                }
                if (isControl) {
                    control++;
                } else if (isDlock) {
                    StringBuilder stack = new StringBuilder("PINNED-BY-DLOCK");
                    for (RecordedFrame f : frames) {
                        stack.append("\n    at ")
                                .append(f.getMethod().getType().getName())
                                .append('.')
                                .append(f.getMethod().getName())
                                .append(':')
                                .append(f.getLineNumber());
                    }
                    byDlock.add(stack.toString());
                }
            }
        } finally {
            Files.deleteIfExists(file);
        }
        // The warm-up call above counts once in the annotated counter and once in the direct one.
        System.out.println("RESULT feature=" + Runtime.version().feature()
                + " " + counter.summary()
                + " direct=" + direct
                + " pinned=" + pinned
                + " control=" + control
                + " pinnedByDlock=" + byDlock.size());
        byDlock.forEach(System.out::println);
        System.out.flush();
        System.exit(0);
    }
}
