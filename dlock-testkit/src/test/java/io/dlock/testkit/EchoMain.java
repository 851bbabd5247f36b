package io.dlock.testkit;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * A child program for {@link ChildJvmIT}: prints {@code READY <pid>}, a {@code TICK n} line every
 * 100 ms, {@code ECHO <line>} for each stdin line, and exits with code n on {@code EXIT n}.
 */
public final class EchoMain {

    private EchoMain() {}

    public static void main(String[] args) throws Exception {
        Thread ticker = new Thread(
                () -> {
                    for (long n = 0; ; n++) {
                        System.out.println("TICK " + n);
                        try {
                            Thread.sleep(100);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                },
                "ticker");
        ticker.setDaemon(true);
        ticker.start();
        System.out.println("READY " + ProcessHandle.current().pid());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith("EXIT ")) {
                System.out.flush();
                System.exit(Integer.parseInt(line.substring(5).trim()));
            }
            if (line.startsWith("ERR ")) {
                System.err.println(line.substring(4));
            } else {
                System.out.println("ECHO " + line);
            }
        }
    }
}
