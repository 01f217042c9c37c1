package lockcheck.locks;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.uuid.Uuids;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Netflix Astyanax's ColumnPrefixDistributedRowLock, re-expressed in CQL (Astyanax speaks Thrift,
 * gone from Cassandra 4.0). It follows Netflix/astyanax
 * astyanax-recipes/src/main/java/com/netflix/astyanax/recipes/locks/ColumnPrefixDistributedRowLock.java
 * at e51608baa2ea4e174fed46a47063a1f74424a9dd (repository head 7c57866e0056afb76109e351b5a86ab063224ff6).
 *
 * <p>No LWT. To lock a row: write the column "_LOCK_" + a time UUID whose value is an expiry, the
 * client's clock in microseconds plus the lock timeout (expireLockAfter: 60 minutes by default,
 * here the run's TTL); then read back every column of the row between "_LOCK_\u0000" and
 * "_LOCK_\uFFFF". A column whose expiry is non-zero and before the reader's clock is stale (deleted
 * at release, or the lock fails when failOnStaleLock, off by default); any other column not ours
 * means busy: delete ours and the stale ones, and give up (the default back-off, RunOnce, allows no
 * retry; the application retries, as this plug-in does by polling with a new lock id, one per
 * attempt as one lock object per attempt would have). Release deletes our column and the stale
 * ones. Every statement at CL_LOCAL_QUORUM (the field's default; the javadoc says QUORUM); no
 * column TTL (withTtl unset). Astyanax's own comment: "This recipe is not a transaction."
 *
 * <p>The Thrift column family (row key, column name, long value) is CQL's view of one:
 * (key text, column1 text, value bigint, PRIMARY KEY (key, column1)). Writes carry the driver's
 * client-side timestamps, as Thrift mutations carried the client's. A driver error on the write
 * or the read propagates out of acquire without a release, as in the original (the written column
 * stays until it is stale). The holder's own reckoning of its lock is the timeout counted from
 * after the read-back (acquireTime, System.nanoTime), which releaseWithMutation checks.
 */
final class AstyanaxRowLock implements Lock {
  static final String PREFIX = "_LOCK_";
  private CqlSession session;
  private PreparedStatement write, read, delete;
  private long timeoutMicros;
  private long timeoutMillis;
  /** Per held lock name: our column and the stale ones to delete at release. */
  private final Map<String, List<String>> held = new HashMap<>();

  @Override
  public void setup(CqlSession session, String keyspace, Duration ttl, long deadline) {
    this.session = session;
    timeoutMillis = ttl.toMillis();
    timeoutMicros = TimeUnit.MICROSECONDS.convert(timeoutMillis, TimeUnit.MILLISECONDS);
    String t = keyspace + ".astyanax_locks";
    session.execute(
        SimpleStatement.newInstance(
                "CREATE TABLE IF NOT EXISTS " + t + " (key text, column1 text, value bigint, PRIMARY KEY (key, column1))")
            .setTimeout(Duration.ofMillis(Math.max(1000, deadline - Lock.now()))));
    write = Lock.prepare(session, deadline, "INSERT INTO " + t + " (key, column1, value) VALUES (?, ?, ?)");
    read = Lock.prepare(session, deadline, "SELECT column1, value FROM " + t + " WHERE key = ? AND column1 >= ? AND column1 <= ?");
    delete = Lock.prepare(session, deadline, "DELETE FROM " + t + " WHERE key = ? AND column1 IN ?");
  }

  @Override
  public boolean renews() {
    return false; // the recipe has no way to extend a lock
  }

  static long currentTimeMicros() {
    return TimeUnit.MICROSECONDS.convert(System.currentTimeMillis(), TimeUnit.MILLISECONDS);
  }

  /** One acquire of a fresh lock object: true when ours; busy deletes ours and the stale. */
  private boolean tryOnce(String name) {
    String lockColumn = PREFIX + Uuids.timeBased();
    long curTimeMicros = currentTimeMicros();
    session.execute(
        write.bind(name, lockColumn, curTimeMicros + timeoutMicros).setConsistencyLevel(ConsistencyLevel.LOCAL_QUORUM));
    Map<String, Long> lockResult = new LinkedHashMap<>();
    for (Row r :
        session.execute(
            read.bind(name, PREFIX + "\u0000", PREFIX + "\uFFFF").setConsistencyLevel(ConsistencyLevel.LOCAL_QUORUM))) {
      lockResult.put(r.getString(0), r.getLong(1));
    }
    List<String> toDelete = new ArrayList<>();
    boolean busy = false;
    for (Map.Entry<String, Long> e : lockResult.entrySet()) {
      if (e.getValue() != 0 && curTimeMicros > e.getValue()) {
        toDelete.add(e.getKey()); // stale: never cleaned up
      } else if (!e.getKey().equals(lockColumn)) {
        busy = true;
        break;
      }
    }
    toDelete.add(lockColumn);
    if (busy) {
      session.execute(delete.bind(name, toDelete).setConsistencyLevel(ConsistencyLevel.LOCAL_QUORUM));
      return false;
    }
    held.put(name, toDelete);
    return true;
  }

  @Override
  public long acquire(String name, String owner, long deadline) throws Unknown, Failed {
    long poll = 5;
    while (true) {
      try {
        if (tryOnce(name)) return Lock.now() + timeoutMillis; // acquireTime + timeout
      } catch (RuntimeException e) {
        // Out of acquire as the original throws it: our column may be written and stays.
        throw new Unknown("acquire: " + e);
      }
      long left = deadline - Lock.now();
      if (left <= 100) break;
      Lock.sleep(Math.min(ThreadLocalRandom.current().nextLong(poll) + 1, left - 100));
      poll = Math.min(poll * 2, 250);
    }
    throw new Failed("busy: another lock column is on the row");
  }

  @Override
  public long renew(String name, String owner, long deadline) throws Failed {
    throw new Failed("ColumnPrefixDistributedRowLock cannot extend a lock");
  }

  @Override
  public void release(String name, String owner, long deadline) throws Unknown, Failed {
    List<String> cols = held.remove(name);
    if (cols == null) throw new Failed("not held");
    try {
      session.execute(delete.bind(name, cols).setConsistencyLevel(ConsistencyLevel.LOCAL_QUORUM));
    } catch (RuntimeException e) {
      throw new Unknown("release: " + e);
    }
  }
}
