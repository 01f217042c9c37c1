package lockcheck;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.cql.Statement;
import com.datastax.oss.driver.api.core.servererrors.UnavailableException;
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
import java.util.concurrent.ThreadLocalRandom;

/**
 * lockcheck's Java reference plug-in: seed 000's lease ("Consensus on Cassandra") over the Apache
 * Cassandra Java driver, as published, flaw included:
 *
 * <pre>
 * CREATE TABLE leases (name text PRIMARY KEY, owner text, value text) WITH default_time_to_live = 180
 * acquire  INSERT INTO leases (name, owner) VALUES (?, ?) IF NOT EXISTS USING TTL ?
 * renew    UPDATE leases USING TTL ? SET owner = ? WHERE name = ? IF owner = ?
 * release  DELETE FROM leases WHERE name = ? IF owner = ?
 * </pre>
 *
 * It speaks lockcheck's JSON-lines protocol on stdin/stdout (docs/plugin.md); the driver
 * logs to stderr, which lockcheck writes to the run's log.
 */
public final class LeasePlugin {
  /** The outcome of an LWT is unknown (CAS timeout, client time-out). */
  static final class Unknown extends Exception {
    Unknown(String msg) {
      super(msg);
    }
  }

  /** The operation certainly did not take effect. */
  static final class Failed extends Exception {
    Failed(String msg) {
      super(msg);
    }
  }

  private final CqlSession session;
  private final String ks;
  private final int ttl;
  private final double validSeconds;
  private PreparedStatement insert, renew, delete, holder;

  LeasePlugin() {
    List<InetSocketAddress> hosts = new ArrayList<>();
    for (String h : System.getenv("LOCKCHECK_HOSTS").split(",")) {
      h = h.trim();
      if (h.isEmpty()) continue;
      int i = h.lastIndexOf(':');
      hosts.add(new InetSocketAddress(h.substring(0, i), Integer.parseInt(h.substring(i + 1))));
    }
    ks = System.getenv("LOCKCHECK_KEYSPACE");
    long ttlMs = Long.parseLong(System.getenv("LOCKCHECK_TTL_MS"));
    ttl = (int) Math.max(1, (ttlMs + 999) / 1000); // CQL TTLs are whole seconds: round up
    // Cassandra stores expiry in whole seconds, so a cell may expire up to a second early: the
    // grant is valid for the TTL less a margin.
    validSeconds = ttl - 1.0 - ttl / 10.0;
    // LWTs are never idempotent (the default), so the driver never retries one that may have
    // applied; the local datacenter is inferred from the contact points.
    DriverConfigLoader config =
        DriverConfigLoader.programmaticBuilder()
            .withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, "DcInferringLoadBalancingPolicy")
            .withString(DefaultDriverOption.REQUEST_CONSISTENCY, DefaultConsistencyLevel.QUORUM.name())
            .withString(DefaultDriverOption.REQUEST_SERIAL_CONSISTENCY, DefaultConsistencyLevel.SERIAL.name())
            .withDuration(DefaultDriverOption.REQUEST_TIMEOUT, Duration.ofSeconds(10))
            .withDuration(DefaultDriverOption.CONNECTION_INIT_QUERY_TIMEOUT, Duration.ofSeconds(10))
            .withDuration(DefaultDriverOption.METADATA_SCHEMA_REQUEST_TIMEOUT, Duration.ofSeconds(10))
            .withDuration(DefaultDriverOption.CONTROL_CONNECTION_AGREEMENT_TIMEOUT, Duration.ofSeconds(30))
            .build();
    session = CqlSession.builder().addContactPoints(hosts).withConfigLoader(config).build();
  }

  void setup(long deadline) {
    String t = ks + ".leases";
    session.execute(
        SimpleStatement.newInstance(
                "CREATE TABLE IF NOT EXISTS "
                    + t
                    + " (name text PRIMARY KEY, owner text, value text) WITH default_time_to_live = 180")
            .setTimeout(Duration.ofMillis(Math.max(1000, deadline - now()))));
    insert = session.prepare("INSERT INTO " + t + " (name, owner) VALUES (?, ?) IF NOT EXISTS USING TTL ?");
    renew = session.prepare("UPDATE " + t + " USING TTL ? SET owner = ? WHERE name = ? IF owner = ?");
    delete = session.prepare("DELETE FROM " + t + " WHERE name = ? IF owner = ?");
    holder = session.prepare("SELECT owner FROM " + t + " WHERE name = ?");
  }

  static long now() {
    return System.nanoTime() / 1_000_000;
  }

  /** Runs an LWT; returns its row ([applied] first). */
  Row lwt(Statement<?> st, long deadline) throws Unknown, Failed {
    long left = deadline - now();
    if (left <= 50) throw new Failed("no time left");
    try {
      return session.execute(st.setTimeout(Duration.ofMillis(left))).one();
    } catch (UnavailableException e) {
      throw new Failed(e.getMessage()); // refused before Paxos began
    } catch (RuntimeException e) {
      // CAS write timeouts, CAS unknown, client time-outs, connections lost mid-request.
      throw new Unknown(e.getClass().getSimpleName() + ": " + e.getMessage());
    }
  }

  /** Polls until granted or the deadline; returns the lease in ms counted from received. */
  long acquire(String name, String owner, long deadline, long received) throws Unknown, Failed {
    Unknown pending = null; // the last unknown outcome, while unsettled
    long poll = 5;
    while (true) {
      long start = now();
      try {
        if (!heldByOther(name, owner, deadline)) {
          Row r = lwt(insert.bind(name, owner, ttl), deadline);
          if (r.getBoolean(0)) return leaseMs(start, received);
          if (owner.equals(r.getString("owner"))) {
            // An earlier attempt of ours applied after all: renew it, so that the lease counts
            // from now.
            start = now();
            r = lwt(renew.bind(ttl, owner, name, owner), deadline);
            if (r.getBoolean(0)) return leaseMs(start, received);
          }
        }
      } catch (Unknown e) {
        pending = e;
      } catch (Failed e) {
        // a definite miss of this attempt: poll again
      }
      long left = deadline - now();
      if (left <= 100) break;
      sleep(Math.min(ThreadLocalRandom.current().nextLong(poll) + 1, left - 100));
      poll = Math.min(poll * 2, 250);
    }
    if (pending != null) {
      cleanup(name, owner);
      throw new Unknown("gave up with an attempt unsettled: " + pending.getMessage());
    }
    throw new Failed("not acquired before the deadline");
  }

  boolean heldByOther(String name, String owner, long deadline) {
    try {
      Row r =
          session
              .execute(holder.bind(name).setTimeout(Duration.ofMillis(Math.max(50, deadline - now()))))
              .one();
      if (r == null) return false;
      String h = r.getString(0);
      return h != null && !h.isEmpty() && !h.equals(owner);
    } catch (RuntimeException e) {
      return false; // a failed read says nothing: try the LWT
    }
  }

  long leaseMs(long start, long received) {
    return Math.max(1, (long) (start + validSeconds * 1000 - received));
  }

  void cleanup(String name, String owner) {
    try {
      session.execute(delete.bind(name, owner).setTimeout(Duration.ofSeconds(3)));
    } catch (RuntimeException e) {
      System.err.println("cleanup of " + name + " after an unknown acquire: " + e.getMessage());
    }
  }

  boolean release(String name, String owner, long deadline) throws Unknown, Failed {
    return lwt(delete.bind(name, owner), deadline).getBoolean(0);
  }

  public static void main(String[] args) throws Exception {
    ObjectMapper json = new ObjectMapper();
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    LeasePlugin lease = null;
    for (String line; (line = in.readLine()) != null; ) {
      long received = now();
      JsonNode req = json.readTree(line);
      long id = req.get("id").asLong();
      String op = req.get("op").asText();
      long deadline = received + req.path("timeout_ms").asLong(10000);
      ObjectNode reply = json.createObjectNode().put("id", id).put("type", "ok");
      try {
        switch (op) {
          case "setup" -> {
            lease = new LeasePlugin();
            lease.setup(deadline);
          }
          case "acquire" -> reply.put(
              "lease_ms", lease.acquire(req.get("lock").asText(), req.get("owner").asText(), deadline, received));
          case "release" -> {
            if (!lease.release(req.get("lock").asText(), req.get("owner").asText(), deadline))
              reply.put("type", "fail").put("error", "not held");
          }
          default -> reply.put("type", "fail").put("error", "unknown op " + op);
        }
      } catch (Unknown e) {
        reply.put("type", "info").put("error", e.getMessage());
      } catch (Failed e) {
        reply.put("type", "fail").put("error", e.getMessage());
      } catch (RuntimeException e) {
        // Setup failed (nothing to undo), or an error that may have reached the cluster.
        reply.put("type", op.equals("setup") ? "fail" : "info").put("error", e.toString());
      }
      out.println(json.writeValueAsString(reply));
      out.flush();
    }
    // End of input: lockcheck is done with this process. Exit at once; the
    // driver's non-daemon threads would keep the JVM alive until killed.
    System.exit(0);
  }

  static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
