package lockcheck.locks;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.servererrors.QueryConsistencyException;
import com.datastax.oss.driver.api.core.AllNodesFailedException;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Apache Cassandra Sidecar's cluster-wide lease, re-expressed over the DataStax Java driver 4
 * (Sidecar uses driver 3). It follows apache/cassandra-sidecar:
 *
 * <ul>
 *   <li>server/src/main/java/org/apache/cassandra/sidecar/db/schema/SidecarLeaseSchema.java at
 *       5a98c3faf33f2d2e9c0a6915fde0ee6814ebf341 (table, claim and extend statements);
 *   <li>server/src/main/java/org/apache/cassandra/sidecar/db/SidecarLeaseDatabaseAccessor.java at
 *       2ee05f276c5c9d73f938a74b2237b1e24c03e8cf (a result not applied names the current owner);
 *   <li>server/src/main/java/org/apache/cassandra/sidecar/coordination/ClusterLeaseClaimTask.java at
 *       01cdae76b1a44e44faa7d1213f1e78c04ce088d4 (extend when we hold, else claim; which errors
 *       leave the owner unknown; a holder keeps its lease on an unknown owner until its own
 *       reckoning of the lease runs out: the instant of the last success, on the wall clock, plus
 *       the TTL).
 * </ul>
 *
 * Facts kept: statements as below with the TTL burnt into them (leaseSchemaTTLSeconds: 120 by
 * default, 60 at least; here the run's TTL in whole seconds, rounded up); the session's default
 * consistency (driver 3's LOCAL_ONE, serial SERIAL), no retries; no release: a lease ends only by
 * its TTL. Sidecar's own javadoc says the lease is best effort: several instances may hold it at
 * once under partitions.
 *
 * <p>Mapped onto the protocol: the client is the Sidecar instance (its host id is
 * sidecar-c&lt;client&gt;, so a replacement process is that instance restarted with its memory
 * lost); acquire claims until it holds (Sidecar claims every 30 s or more, this polls); renew is
 * the periodic task's extend; release forgets nothing and writes nothing, since Sidecar has no
 * release. There is one lease per keyspace ('cluster_lease_holder' is a literal of the CQL), so
 * the lock name is not used: rows run one lock.
 */
final class SidecarLease implements Lock {
  private CqlSession session;
  private PreparedStatement claim, extend;
  private long ttlSeconds;
  private String hostId;
  /** The task's memory: who holds (as last resolved) and when we last claimed or extended. */
  private String currentLeaseholder;
  private Instant leaseTime;
  /**
   * The last claim or extend that threw (Sidecar's "owner is unknown", null in its task's
   * field): a claim that threw may have been applied, so an acquire that gives up after one is
   * unknown, not refused.
   */
  private RuntimeException lastError;

  @Override
  public void setup(CqlSession session, String keyspace, Duration ttl, long deadline) {
    this.session = session;
    ttlSeconds = Math.max(1, (ttl.toMillis() + 999) / 1000);
    hostId = "sidecar-c" + System.getenv().getOrDefault("LOCKCHECK_CLIENT", "0");
    String table = "sidecar_lease_v1";
    session.execute(
        SimpleStatement.newInstance(
                String.format(
                    "CREATE TABLE IF NOT EXISTS %s.%s (" + "name text PRIMARY KEY," + "owner text) " + "WITH gc_grace_seconds = 86400",
                    keyspace, table))
            .setTimeout(Duration.ofMillis(Math.max(1000, deadline - Lock.now()))));
    claim =
        Lock.prepare(session, deadline,
            String.format(
                "INSERT INTO %s.%s (name,owner) VALUES ('cluster_lease_holder',?) " + "IF NOT EXISTS USING TTL %d",
                keyspace, table, ttlSeconds));
    extend =
        Lock.prepare(session, deadline,
            String.format(
                "UPDATE %s.%s USING TTL %d SET owner = ? " + "WHERE name = 'cluster_lease_holder' IF owner = ?",
                keyspace, table, ttlSeconds));
  }

  @Override
  public boolean renews() {
    return true;
  }

  /**
   * The accessor and the task's error handling: the owner the statement resolved, or null when it
   * is unknown (a consistency error, no host, a result with no owner column, anything else).
   */
  private String leaseAction(PreparedStatement st, long deadline) {
    lastError = null;
    try {
      ResultSet rs =
          session.execute(
              (st == claim ? claim.bind(hostId) : extend.bind(hostId, hostId))
                  .setConsistencyLevel(ConsistencyLevel.LOCAL_ONE)
                  .setSerialConsistencyLevel(ConsistencyLevel.SERIAL));
      if (rs.wasApplied()) return hostId;
      Row r = rs.one();
      return r.getString("owner"); // no owner column (the row expired): IllegalArgumentException
    } catch (QueryConsistencyException | AllNodesFailedException | IllegalArgumentException e) {
      lastError = e;
      System.err.println("sidecar: unable to resolve the lease owner: " + e);
    } catch (RuntimeException e) {
      lastError = e;
      System.err.println("sidecar: unable to resolve the lease owner (unexpected): " + e);
    }
    return null;
  }

  /**
   * One run of the claim task; returns when our lease ends (monotonic), or -1 when we do not hold
   * it. The lease is Sidecar's reckoning: from when the reply came, TTL seconds, on the wall clock.
   */
  private long runClaimProcess(long deadline) {
    boolean wasLeaseholder = hostId.equals(currentLeaseholder);
    currentLeaseholder = leaseAction(wasLeaseholder ? extend : claim, deadline);
    if (currentLeaseholder == null) {
      boolean expired = leaseTime != null && leaseTime.plusSeconds(ttlSeconds).isBefore(Instant.now());
      if (wasLeaseholder && !expired) {
        currentLeaseholder = hostId; // keep it, without a new lease time
        return leaseEnd();
      }
      leaseTime = null;
      return -1;
    }
    if (hostId.equals(currentLeaseholder)) {
      leaseTime = Instant.now();
      return leaseEnd();
    }
    leaseTime = null;
    return -1;
  }

  /** leaseTime + TTL on the wall clock, as an instant of the monotonic clock. */
  private long leaseEnd() {
    long left = Duration.between(Instant.now(), leaseTime.plusSeconds(ttlSeconds)).toMillis();
    return Lock.now() + left;
  }

  @Override
  public long acquire(String name, String owner, long deadline) throws Unknown, Failed {
    RuntimeException error = null; // a claim that threw: it may have taken the lease
    long poll = 5;
    while (true) {
      long end = runClaimProcess(deadline);
      if (end > Lock.now()) return end;
      if (lastError != null) error = lastError;
      long left = deadline - Lock.now();
      if (left <= 100) break;
      Lock.sleep(Math.min(ThreadLocalRandom.current().nextLong(poll) + 1, left - 100));
      poll = Math.min(poll * 2, 250);
    }
    // The task's owner is null after a claim that threw: unknown, not a row without an owner.
    if (error != null) throw new Unknown("gave up after a claim that threw: " + error);
    throw new Failed("lease held by " + currentLeaseholder);
  }

  @Override
  public long renew(String name, String owner, long deadline) throws Unknown, Failed {
    if (!hostId.equals(currentLeaseholder)) throw new Failed("not the leaseholder");
    long end = runClaimProcess(deadline);
    if (end > Lock.now()) return end;
    if (lastError != null) throw new Unknown("extend threw past the lease's end: " + lastError);
    throw new Failed("lease lost to " + currentLeaseholder);
  }

  @Override
  public void release(String name, String owner, long deadline) {
    // Sidecar gives a lease up only by not extending it; its memory of holding stays.
  }
}
