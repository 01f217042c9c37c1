package lockcheck.locks;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.CqlSessionBuilder;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.config.ProgrammaticDriverConfigLoaderBuilder;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * One --lock-cmd plug-in for the catalogue's Java locks (docs/plugin.md): {@code run LOCK} picks
 * the lock, this loop speaks lockcheck's JSON-lines protocol, one request at a time, and hands each
 * to the lock. The locks differ only in how they take, keep and give up a lock; the session they
 * share is the driver's defaults with the contact points, data centre and (when the run pins its
 * clients) the single coordinator lockcheck names.
 */
public final class Main {
  static final Map<String, Supplier<Lock>> LOCKS =
      Map.of(
          "shedlock", ShedLockLock::new,
          "sidecar", SidecarLease::new,
          "reaper", ReaperLeader::new,
          "astyanax", AstyanaxRowLock::new);

  public static void main(String[] args) throws Exception {
    if (args.length != 1 || !LOCKS.containsKey(args[0])) {
      System.err.println("usage: run " + String.join("|", LOCKS.keySet()));
      System.exit(2);
    }
    Lock lock = LOCKS.get(args[0]).get();
    ObjectMapper json = new ObjectMapper();
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      long received = Lock.now();
      JsonNode req = json.readTree(line);
      long id = req.get("id").asLong();
      String op = req.get("op").asText();
      long deadline = received + req.path("timeout_ms").asLong(10000);
      String name = req.path("lock").asText();
      String owner = req.path("owner").asText();
      ObjectNode reply = json.createObjectNode().put("id", id).put("type", "ok");
      try {
        switch (op) {
          case "setup" -> {
            lock.setup(session(), System.getenv("LOCKCHECK_KEYSPACE"), ttl(), deadline);
            reply.put("renew", lock.renews());
          }
          case "acquire" -> reply.put("lease_ms", lock.acquire(name, owner, deadline) - received);
          case "renew" -> reply.put("lease_ms", lock.renew(name, owner, deadline) - received);
          case "release" -> lock.release(name, owner, deadline);
          default -> reply.put("type", "fail").put("error", "unknown op " + op);
        }
      } catch (Lock.Unknown e) {
        reply.put("type", "info").put("error", e.getMessage());
      } catch (Lock.Failed e) {
        reply.put("type", "fail").put("error", e.getMessage());
      } catch (RuntimeException e) {
        // Setup failed (nothing to undo), or an error that may have reached the cluster.
        reply.put("type", op.equals("setup") ? "fail" : "info").put("error", e.toString());
      }
      if (reply.has("lease_ms") && reply.get("lease_ms").asLong() <= 0) {
        // Granted, but the grant had run out by the time it was known: the lock is certainly not
        // ours to use now, though it may be in the table until it expires.
        reply.remove("lease_ms");
        reply.put("type", "info").put("error", "granted with no lease left");
      }
      out.println(json.writeValueAsString(reply));
      out.flush();
    }
    // End of input: lockcheck is done with this process; the driver's threads would keep the
    // JVM alive.
    System.exit(0);
  }

  static Duration ttl() {
    return Duration.ofMillis(Long.parseLong(System.getenv("LOCKCHECK_TTL_MS")));
  }

  static List<InetSocketAddress> hosts(String list) {
    List<InetSocketAddress> hosts = new ArrayList<>();
    for (String h : list.split(",")) {
      h = h.trim();
      if (h.isEmpty()) continue;
      int i = h.lastIndexOf(':');
      hosts.add(new InetSocketAddress(h.substring(0, i), Integer.parseInt(h.substring(i + 1))));
    }
    return hosts;
  }

  /**
   * The application's session: the driver's defaults (request time-out 2 s, no retries of a
   * non-idempotent statement), with schema time-outs long enough for a loaded test cluster.
   */
  @SuppressWarnings("deprecation") // withNodeFilter: the simplest way to keep to one coordinator
  static CqlSession session() {
    String dc = System.getenv("LOCKCHECK_DC");
    ProgrammaticDriverConfigLoaderBuilder config =
        DriverConfigLoader.programmaticBuilder()
            .withDuration(DefaultDriverOption.CONNECTION_INIT_QUERY_TIMEOUT, Duration.ofSeconds(10))
            .withDuration(DefaultDriverOption.METADATA_SCHEMA_REQUEST_TIMEOUT, Duration.ofSeconds(10))
            .withDuration(DefaultDriverOption.CONTROL_CONNECTION_AGREEMENT_TIMEOUT, Duration.ofSeconds(30));
    if (dc == null || dc.isEmpty()) {
      config.withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, "DcInferringLoadBalancingPolicy");
    }
    String pin = System.getenv("LOCKCHECK_PIN");
    boolean pinned = pin != null && !pin.isEmpty();
    // A pinned client talks to its one coordinator only (the coord-* faults aim at it): the
    // control connection too, so it is the only contact point.
    CqlSessionBuilder b =
        CqlSession.builder()
            .addContactPoints(hosts(pinned ? pin : System.getenv("LOCKCHECK_HOSTS")))
            .withConfigLoader(config.build());
    if (dc != null && !dc.isEmpty()) b.withLocalDatacenter(dc);
    if (pinned) {
      InetSocketAddress p = hosts(pin).get(0);
      b.withNodeFilter(
          n ->
              n.getBroadcastRpcAddress()
                  .map(a -> a.getAddress().equals(p.getAddress()) && a.getPort() == p.getPort())
                  .orElse(false));
    }
    return b.build();
  }
}
