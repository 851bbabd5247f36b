package io.dlock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.time.Duration;
import org.junit.jupiter.api.Test;

class ExceptionsTest {

    @Test
    void distributedLockException_withLock_messageNamesLockAndBackend() {
        IOException cause = new IOException("connection refused");

        DistributedLockException e = new DistributedLockException("orders", "zookeeper", "boom", cause);

        assertThat(e).hasMessage("lock 'orders' on zookeeper: boom").hasCause(cause);
        assertThat(e.lockName()).isEqualTo("orders");
        assertThat(e.backend()).isEqualTo("zookeeper");
        assertThat(e).isInstanceOf(RuntimeException.class);
    }

    @Test
    void distributedLockException_withoutLock_messageNamesBackend() {
        DistributedLockException e = new DistributedLockException(null, "redis", "cannot connect", null);

        assertThat(e).hasMessage("redis: cannot connect").hasNoCause();
        assertThat(e.lockName()).isNull();
        assertThat(e.backend()).isEqualTo("redis");
    }

    @Test
    void distributedLockException_nullBackend_throwsNullPointer() {
        assertThatThrownBy(() -> new DistributedLockException("orders", null, "x", null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("backend");
    }

    @Test
    void lockTimeoutException_message_namesLockBackendAndWait() {
        LockTimeoutException e = new LockTimeoutException("orders", "zookeeper", Duration.ofSeconds(2));

        assertThat(e).hasMessage("lock 'orders' on zookeeper: not acquired within PT2S");
        assertThat(e.waitTime()).isEqualTo(Duration.ofSeconds(2));
        assertThat(e.lockName()).isEqualTo("orders");
        assertThat(e.backend()).isEqualTo("zookeeper");
        assertThat(e).isInstanceOf(DistributedLockException.class);
    }

    @Test
    void lockLostException_message_namesLockBackendAndReason() {
        IllegalStateException cause = new IllegalStateException("session expired");

        LockLostException e = new LockLostException("orders", "redis", "lease not renewed in time", cause);

        assertThat(e)
                .hasMessage("lock 'orders' on redis: lease lost: lease not renewed in time")
                .hasCause(cause);
        assertThat(e).isInstanceOf(DistributedLockException.class);
    }

    @Test
    void lockBackendException_message_namesLockBackendAndKeepsCause() {
        IOException cause = new IOException("timeout");

        LockBackendException e = new LockBackendException("orders", "etcd", "enqueue failed", cause);

        assertThat(e).hasMessage("lock 'orders' on etcd: enqueue failed").hasCause(cause);
        assertThat(new LockBackendException(null, "etcd", "unreachable", cause)).hasMessage("etcd: unreachable");
        assertThat(e).isInstanceOf(DistributedLockException.class);
    }
}
