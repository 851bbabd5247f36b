package io.dlock.cli.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.ConnectException;
import org.junit.jupiter.api.Test;

class ErrorAdviceTest {

    @Test
    void advice_missingBinaryMessage_namesTheDebianPackage() {
        IllegalStateException e = new IllegalStateException("redis-server not found on the PATH: the Redis tests need a"
                + " real server. Install one (Debian/Ubuntu: apt-get install redis-server) or point -D...");

        assertThat(ErrorAdvice.advice(new IllegalStateException("could not start", e)))
                .hasValue("install the Debian package redis-server (sudo apt-get install redis-server)");
    }

    @Test
    void advice_configuredBinaryNotExecutable_namesThePackage() {
        assertThat(ErrorAdvice.advice(new IllegalStateException(
                        "etcd '/opt/none' (from -Ddlock.test.etcd or DLOCK_ETCD) is not an executable file")))
                .get()
                .asString()
                .contains("apt-get install etcd-server");
    }

    @Test
    void advice_portTaken_saysToFreeOrChangeIt() {
        UncheckedIOException e = new UncheckedIOException("cannot listen", new BindException("Address already in use"));

        assertThat(ErrorAdvice.advice(e)).get().asString().contains("port is already taken");
    }

    @Test
    void advice_nothingListening_saysToStartTheServer() {
        assertThat(ErrorAdvice.advice(new IllegalStateException("x", new ConnectException("Connection refused"))))
                .get()
                .asString()
                .contains("start the server");
    }

    @Test
    void advice_unknownFailure_empty() {
        assertThat(ErrorAdvice.advice(new IllegalStateException("something else")))
                .isEmpty();
    }
}
