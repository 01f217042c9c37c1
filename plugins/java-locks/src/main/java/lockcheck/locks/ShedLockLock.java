package lockcheck.locks;

import com.datastax.oss.driver.api.core.CqlIdentifier;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.cassandra.CassandraLockProvider;
import net.javacrumbs.shedlock.support.Utils;

/**
 * ShedLock's Cassandra provider as released: net.javacrumbs.shedlock:shedlock-provider-cassandra
 * 5.0.1 from Maven Central (source: github.com/lukas-krecan/ShedLock, tag shedlock-parent-5.0.1,
 * commit 2774caf15741eee26d4b7bfa913d12bfc94fe609), called through its public API: nothing of it is
 * re-expressed here. What it does, for the catalogue: a row per lock name holding lockUntil, an
 * instant of the client's clock; take a free lock by INSERT ... IF NOT EXISTS, take an expired one
 * by UPDATE ... IF lockUntil < now (now from the client's clock), extend and unlock by UPDATE ... IF
 * lockUntil >= now AND lockedBy = hostname; QUORUM and SERIAL by default. No TTL: expiry is a
 * comparison of client clocks.
 *
 * <p>The plug-in is the application: it asks for the lock with lockAtMostFor = the run's TTL and
 * lockAtLeastFor = 0, polls while ShedLock answers "held", counts the grant's lease as
 * lockAtMostFor from the moment it asked (ShedLock's own createdAt), renews with
 * SimpleLock.extend and releases with SimpleLock.unlock.
 */
final class ShedLockLock implements Lock {
  private CassandraLockProvider provider;
  private Duration ttl;
  /** The held locks by name: ShedLock's handle is the only way to extend or unlock one. */
  private final Map<String, SimpleLock> held = new HashMap<>();

  @Override
  public void setup(CqlSession session, String keyspace, Duration ttl, long deadline) {
    this.ttl = ttl;
    // ShedLock's README and CassandraLockProvider's javadoc, with IF NOT EXISTS (every process sets
    // up) and the run's keyspace for theirs.
    session.execute(
        SimpleStatement.newInstance(
                "CREATE TABLE IF NOT EXISTS "
                    + keyspace
                    + ".lock (name text PRIMARY KEY, lockUntil timestamp, lockedAt timestamp, lockedBy text);")
            .setTimeout(Duration.ofMillis(Math.max(1000, deadline - Lock.now()))));
    provider =
        new CassandraLockProvider(
            CassandraLockProvider.Configuration.builder()
                .withCqlSession(session)
                .withKeyspace(CqlIdentifier.fromCql(keyspace))
                .build());
    System.err.println("shedlock: this process's lockedBy is " + Utils.getHostname());
  }

  @Override
  public boolean renews() {
    return true;
  }

  @Override
  public long acquire(String name, String owner, long deadline) throws Unknown, Failed {
    if (held.containsKey(name)) throw new Failed("already held by this process");
    RuntimeException error = null; // an attempt that threw: it may have taken the lock
    long poll = 5;
    while (true) {
      long start = Lock.now();
      try {
        Optional<SimpleLock> l = provider.lock(new LockConfiguration(ClockProvider.now(), name, ttl, Duration.ZERO));
        if (l.isPresent()) {
          held.put(name, l.get());
          return start + ttl.toMillis();
        }
      } catch (RuntimeException e) {
        // ShedLock lets the read before its LWT and the driver's own time-outs through; an
        // LWT's server error it logs and answers "not locked".
        error = e;
      }
      long left = deadline - Lock.now();
      if (left <= 100) break;
      Lock.sleep(Math.min(ThreadLocalRandom.current().nextLong(poll) + 1, left - 100));
      poll = Math.min(poll * 2, 250);
    }
    if (error != null) throw new Unknown("gave up after an attempt that threw: " + error);
    throw new Failed("not acquired before the deadline");
  }

  @Override
  public long renew(String name, String owner, long deadline) throws Unknown, Failed {
    SimpleLock l = held.remove(name); // extend spends the handle, granted or not
    if (l == null) throw new Failed("not held");
    long start = Lock.now();
    Optional<SimpleLock> next;
    try {
      next = l.extend(ttl, Duration.ZERO);
    } catch (RuntimeException e) {
      throw new Unknown("extend: " + e);
    }
    if (next.isEmpty()) throw new Failed("extend refused: the lock expired or is not ours");
    held.put(name, next.get());
    return start + ttl.toMillis();
  }

  @Override
  public void release(String name, String owner, long deadline) throws Unknown, Failed {
    SimpleLock l = held.remove(name);
    if (l == null) throw new Failed("not held");
    try {
      l.unlock(); // ShedLock does not say whether its UPDATE applied
    } catch (RuntimeException e) {
      throw new Unknown("unlock: " + e);
    }
  }
}
