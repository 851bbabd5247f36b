package io.dlock.testkit;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertificateFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;

/**
 * A throwaway CA and a server certificate for {@code 127.0.0.1}/{@code localhost} (P-256 keys,
 * valid two days), made with the {@code openssl} CLI in a server's directory, plus a PKCS12 trust
 * store holding only the CA and a socket factory that trusts it. For test servers that speak TLS.
 *
 * <p>Thread-safety: immutable once made.
 */
public final class TlsMaterial {
    /** The password of {@link #TRUST_STORE}. */
    public static final String TRUST_STORE_PASSWORD = "dlock-test";
    /** The CA's certificate, PEM-encoded, in the directory given to {@link #create}. */
    public static final String CA_CERTIFICATE = "ca.crt";
    /** The server's certificate, PEM-encoded, signed by the CA. */
    public static final String SERVER_CERTIFICATE = "server.crt";
    /** The server's private key, PEM-encoded, unencrypted. */
    public static final String SERVER_KEY = "server.key";
    /** A PKCS12 trust store holding only the CA, with password {@value #TRUST_STORE_PASSWORD}. */
    public static final String TRUST_STORE = "truststore.p12";

    private static final Duration OPENSSL_TIMEOUT = Duration.ofSeconds(30);

    private final Path dir;
    private final SSLSocketFactory socketFactory;

    private TlsMaterial(Path dir, SSLSocketFactory socketFactory) {
        this.dir = dir;
        this.socketFactory = socketFactory;
    }

    /**
     * Makes the CA, the server certificate and the trust store in {@code dir}.
     *
     * <p>Blocking: runs openssl three times, each bounded by 30 s. Thread-safety: one call per
     * directory. On failure: {@link IllegalStateException} with openssl's output, or if openssl is
     * not installed; {@link UncheckedIOException} if the files cannot be written.
     *
     * @param dir an existing directory the caller owns and deletes
     * @return the material
     */
    public static TlsMaterial create(Path dir) {
        String openssl = openssl();
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
        String ec = "ec_paramgen_curve:prime256v1";
        run(
                dir,
                openssl,
                "req",
                "-x509",
                "-newkey",
                "ec",
                "-pkeyopt",
                ec,
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                CA_CERTIFICATE,
                "-days",
                "2",
                "-subj",
                "/CN=dlock throwaway test CA",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign");
        run(
                dir,
                openssl,
                "req",
                "-new",
                "-newkey",
                "ec",
                "-pkeyopt",
                ec,
                "-nodes",
                "-keyout",
                SERVER_KEY,
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost");
        run(
                dir,
                openssl,
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                CA_CERTIFICATE,
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                SERVER_CERTIFICATE,
                "-days",
                "2",
                "-extfile",
                ext.toString());
        try (InputStream in = Files.newInputStream(dir.resolve(CA_CERTIFICATE));
                OutputStream out = Files.newOutputStream(dir.resolve(TRUST_STORE))) {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            store.setCertificateEntry(
                    "dlock-test-ca", CertificateFactory.getInstance("X.509").generateCertificate(in));
            store.store(out, TRUST_STORE_PASSWORD.toCharArray());
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(store);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(null, tmf.getTrustManagers(), null);
            return new TlsMaterial(dir, context.getSocketFactory());
        } catch (IOException e) {
            throw new UncheckedIOException(dir + ": cannot read the CA certificate or write the trust store", e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(dir + ": cannot load the CA certificate openssl made", e);
        }
    }

    /**
     * Returns a file of the material, one of this class's file-name constants.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread.
     *
     * @param name for example {@link #CA_CERTIFICATE}
     * @return its path
     */
    public Path file(String name) {
        return dir.resolve(name);
    }

    /**
     * Returns a socket factory that trusts the CA (and nothing else).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread.
     *
     * @return the factory
     */
    public SSLSocketFactory socketFactory() {
        return socketFactory;
    }

    /**
     * The openssl binary on the PATH.
     *
     * <p>Blocking: never. On failure: {@link IllegalStateException} saying which package to install.
     *
     * @return its path
     */
    public static String openssl() {
        String path = System.getenv("PATH");
        if (path != null) {
            for (String d : path.split(File.pathSeparator, -1)) {
                Path candidate = Path.of(d, "openssl");
                if (Files.isExecutable(candidate)) {
                    return candidate.toString();
                }
            }
        }
        throw new IllegalStateException("openssl not found on the PATH: the testkit makes its throwaway CA and server"
                + " certificates with the openssl CLI. Install it (Debian/Ubuntu: apt-get install openssl)");
    }

    private static void run(Path dir, String openssl, String... args) {
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
                            String.join(" ", cmd) + " did not finish within " + OPENSSL_TIMEOUT + tail(out));
                }
            } finally {
                Reaper.untrack(p);
            }
            if (p.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", cmd) + " exited with " + p.exitValue() + tail(out));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + openssl, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running openssl", e);
        }
    }

    private static String tail(Path log) {
        try {
            List<String> all = Files.readAllLines(log, StandardCharsets.UTF_8);
            return "\n  " + String.join("\n  ", all.subList(Math.max(0, all.size() - 20), all.size()));
        } catch (IOException e) {
            return "";
        }
    }
}
