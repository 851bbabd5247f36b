/**
 * The ZooKeeper backend: {@code zookeeper://host:2181[,host:2181]/namespace}. Connection handling
 * and retries come from the Curator framework; the lock recipe is dlock's own (see {@link
 * io.dlock.zookeeper.ZooKeeperLockProtocol}).
 */
@NullMarked
package io.dlock.zookeeper;

import org.jspecify.annotations.NullMarked;
