package io.dlock.testkit;

/** A child program for {@link FreePortsIT}: prints {@code PORTS p1 p2 ...}, args[0] ports from {@link FreePorts}. */
public final class PortsMain {

    private PortsMain() {}

    public static void main(String[] args) {
        StringBuilder line = new StringBuilder("PORTS");
        for (int i = 0, n = Integer.parseInt(args[0]); i < n; i++) {
            line.append(' ').append(FreePorts.loopback());
        }
        System.out.println(line);
        System.out.flush();
        // Stay alive (holding the block) until the parent has taken its own ports.
        try {
            Thread.sleep(60_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
