package org.apache.zookeeper;

import java.util.Map;
import java.util.Set;

/**
 * Counts the watchers a ZooKeeper handle keeps on the client side, which the public API does not
 * expose (the server keeps one watch per connection and path, however many watchers the client
 * holds for it). Lives in ZooKeeper's package only to reach its package-private watch manager;
 * test code only.
 */
public final class ClientWatches {

    private ClientWatches() {}

    /**
     * The data watchers ({@code getData}/{@code exists} on an existing node) registered in {@code zk}
     * on paths under {@code root} (Curator keeps its own on {@code /zookeeper/config}).
     *
     * @param zk the handle
     * @param root a path prefix such as {@code "/ns/"}
     * @return the number of watcher registrations on those paths
     */
    public static int data(ZooKeeper zk, String root) {
        return count(zk.getWatchManager().getDataWatches(), root);
    }

    /**
     * The child watchers ({@code getChildren}) registered in {@code zk} on paths under {@code root}.
     *
     * @param zk the handle
     * @param root a path prefix such as {@code "/ns/"}
     * @return the number of watcher registrations on those paths
     */
    public static int children(ZooKeeper zk, String root) {
        return count(zk.getWatchManager().getChildWatches(), root);
    }

    /**
     * The data watchers of {@code zk} by path, for failure messages.
     *
     * @param zk the handle
     * @return each watched path with its watcher count
     */
    public static Map<String, Integer> dataByPath(ZooKeeper zk) {
        Map<String, Set<Watcher>> watches = zk.getWatchManager().getDataWatches();
        synchronized (watches) {
            Map<String, Integer> counts = new java.util.TreeMap<>();
            watches.forEach((path, set) -> counts.put(path, set.size()));
            return counts;
        }
    }

    /** Sums the live map's sets under the map's monitor, the lock ZooKeeper itself takes. */
    private static int count(Map<String, Set<Watcher>> watches, String root) {
        synchronized (watches) {
            int n = 0;
            for (Map.Entry<String, Set<Watcher>> e : watches.entrySet()) {
                if (e.getKey().startsWith(root)) {
                    n += e.getValue().size();
                }
            }
            return n;
        }
    }
}
