package io.dlock.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Throwaway TLS material for test servers, made by the {@code openssl} CLI: {@code ca.crt}/{@code
 * ca.key} (a CA valid for two days) and {@code server.crt}/{@code server.key} (for {@code
 * 127.0.0.1} and {@code localhost}, signed by that CA), all in one directory. Another CA, for
 * wrong-CA tests, is {@link #makeCa}.
 */
final class Certificates {
    private static final Duration OPENSSL_TIMEOUT = Duration.ofSeconds(30);
    private static final String CURVE = "ec_paramgen_curve:prime256v1";

    private Certificates() {}

    /** Makes the CA and the server certificate in {@code dir}; {@code who} names the server in errors. */
    static void make(String openssl, Path dir, String who) {
        Path ext = dir.resolve("server.ext");
        try {
            Files.write(
                    ext,
                    List.of(
                            "subjectAltName=IP:127.0.0.1,DNS:localhost",
                            "basicConstraints=critical,CA:FALSE",
                            "keyUsage=critical,digitalSignature,keyEncipherment",
                            "extendedKeyUsage=serverAuth"),
                    StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write " + ext, e);
        }
        makeCa(openssl, dir, "ca", who);
        run(
                openssl,
                dir,
                who,
                "req",
                "-new",
                "-newkey",
                "ec",
                "-pkeyopt",
                CURVE,
                "-nodes",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost");
        run(
                openssl,
                dir,
                who,
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.crt",
                "-days",
                "2",
                "-extfile",
                ext.toString());
    }

    /** Makes a self-signed CA {@code <name>.crt}/{@code <name>.key} in {@code dir}. */
    static void makeCa(String openssl, Path dir, String name, String who) {
        run(
                openssl,
                dir,
                who,
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                CURVE,
                "-nodes",
                "-keyout",
                name + ".key",
                "-out",
                name + ".crt",
                "-days",
                "2",
                "-subj",
                "/CN=dlock throwaway test CA " + name,
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign");
    }

    private static void run(String openssl, Path dir, String who, String... args) {
        List<String> cmd = new ArrayList<>(List.of(openssl));
        cmd.addAll(List.of(args));
        Path out = dir.resolve("openssl.log");
        try {
            Process p = new ProcessBuilder(cmd)
                    .directory(dir.toFile())
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(out.toFile()))
                    .start();
            Reaper.track(p);
            try {
                if (!p.waitFor(OPENSSL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                    p.destroyForcibly();
                    p.waitFor(10, TimeUnit.SECONDS);
                    throw new IllegalStateException(
                            who + ": " + String.join(" ", cmd) + " did not finish within " + OPENSSL_TIMEOUT);
                }
            } finally {
                Reaper.untrack(p);
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException(who + ": " + String.join(" ", cmd) + " exited with " + p.exitValue()
                        + ": " + Files.readString(out, StandardCharsets.UTF_8));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + openssl, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(who + ": interrupted while running openssl", e);
        }
    }
}
