package lockcheck.artifacts;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * lockcheck's JSON-lines protocol (docs/plugin.md), one request at a time, each handed to the
 * tool's lock: the same loop as plugins/java-locks' Main, without renew (none of these tools
 * extends its lock: the application never learns of the TTL, if there is one).
 */
public final class Protocol {
  private Protocol() {}

  public static void serve(Lock lock) throws Exception {
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
          case "setup" -> lock.setup(Env.fromSystem(), deadline);
          case "acquire" -> {
            long until = lock.acquire(name, owner, deadline);
            if (until != Lock.NO_LEASE) {
              if (until - received <= 0) {
                // Granted, but run out by the time it was known: not ours to use now.
                reply.put("type", "info").put("error", "granted with no lease left");
              } else {
                reply.put("lease_ms", until - received);
              }
            }
          }
          case "release" -> lock.release(name, owner, deadline);
          default -> reply.put("type", "fail").put("error", "unknown op " + op);
        }
      } catch (Lock.Unknown e) {
        reply.put("type", "info").put("error", e.getMessage());
      } catch (Lock.Failed e) {
        reply.put("type", "fail").put("error", e.getMessage());
      } catch (Exception e) {
        // Setup failed (nothing to undo), or an error that may have reached the cluster.
        e.printStackTrace(System.err);
        reply.put("type", op.equals("setup") ? "fail" : "info").put("error", e.toString());
      }
      out.println(json.writeValueAsString(reply));
      out.flush();
    }
    // End of input: lockcheck is done with this process; the drivers' threads would keep the
    // JVM alive.
    System.exit(0);
  }
}
