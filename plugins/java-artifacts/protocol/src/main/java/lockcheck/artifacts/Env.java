package lockcheck.artifacts;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** What lockcheck tells a plug-in process in its environment (docs/plugin.md). */
public record Env(
    List<InetSocketAddress> hosts, String keyspace, String dc, InetSocketAddress pin, Duration ttl, int client) {

  public static Env fromSystem() {
    String pin = System.getenv("LOCKCHECK_PIN");
    String ttl = System.getenv("LOCKCHECK_TTL_MS");
    String client = System.getenv("LOCKCHECK_CLIENT");
    return new Env(
        hosts(System.getenv("LOCKCHECK_HOSTS")),
        System.getenv("LOCKCHECK_KEYSPACE"),
        blank(System.getenv("LOCKCHECK_DC")) ? null : System.getenv("LOCKCHECK_DC"),
        blank(pin) ? null : hosts(pin).get(0),
        Duration.ofMillis(blank(ttl) ? 3000 : Long.parseLong(ttl)),
        blank(client) ? 0 : Integer.parseInt(client));
  }

  static boolean blank(String s) {
    return s == null || s.isEmpty();
  }

  static List<InetSocketAddress> hosts(String list) {
    List<InetSocketAddress> hosts = new ArrayList<>();
    if (list == null) return hosts;
    for (String h : list.split(",")) {
      h = h.trim();
      if (h.isEmpty()) continue;
      int i = h.lastIndexOf(':');
      hosts.add(InetSocketAddress.createUnresolved(h.substring(0, i), Integer.parseInt(h.substring(i + 1))));
    }
    return hosts;
  }

  /** The contact points a client uses: its pinned node alone when the run pins it. */
  public List<InetSocketAddress> contacts() {
    return pin != null ? List.of(pin) : hosts;
  }
}
