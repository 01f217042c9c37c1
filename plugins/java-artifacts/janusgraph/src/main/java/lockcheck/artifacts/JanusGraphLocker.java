package lockcheck.artifacts;

import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import org.janusgraph.diskstorage.BackendException;
import org.janusgraph.diskstorage.keycolumnvalue.KeyColumnValueStore;
import org.janusgraph.diskstorage.keycolumnvalue.StoreTransaction;
import org.janusgraph.diskstorage.configuration.ModifiableConfiguration;
import org.janusgraph.diskstorage.cql.CQLConfigOptions;
import org.janusgraph.diskstorage.cql.CQLStoreManager;
import org.janusgraph.diskstorage.locking.TemporaryLockingException;
import org.janusgraph.diskstorage.locking.consistentkey.ConsistentKeyLocker;
import org.janusgraph.diskstorage.util.KeyColumn;
import org.janusgraph.diskstorage.util.StandardBaseTransactionConfig;
import org.janusgraph.diskstorage.util.StaticArrayBuffer;
import org.janusgraph.diskstorage.util.time.TimestampProviders;
import org.janusgraph.graphdb.configuration.GraphDatabaseConfiguration;

/**
 * JanusGraph's ConsistentKeyLocker over its CQL store as released: org.janusgraph:janusgraph-cql
 * 1.0.1 (and janusgraph-core 1.0.1) from Maven Central (source: github.com/JanusGraph/janusgraph),
 * driven through its Locker API as JanusGraph's own Backend and ExpectedValueCheckingTransaction
 * drive it, without a graph: the locker is built as Backend builds it ({@code new
 * ConsistentKeyLocker.Builder(store, storeManager).fromConfig(configuration).build()} over the
 * lock store {@code edgestore_lock_}), and a lock is {@code writeLock} (a graph transaction's
 * lock), {@code checkLocks} (its commit, before any mutation) and {@code deleteLocks} (the commit's
 * end, or a rollback), on a transaction begun with the store's key-consistent configuration
 * (QUORUM reads and writes). Nothing of the lock is re-expressed.
 *
 * <p>What 1.0.1 does, read from its sources jars: writeLock writes a claim column whose name is
 * the client's clock (microseconds) and the instance's id, {@code USING TIMESTAMP} of that clock,
 * no LWT, up to 3 tries (storage.lock.retries) when a write fails or takes longer than lockWait
 * (100 ms, storage.lock.wait-time); checkLocks sleeps until lockWait after the claim's timestamp,
 * reads every claim of the key, drops those older than lockExpire (300 s,
 * storage.lock.expiry-time) by the reader's clock, and holds the lock when the earliest remaining
 * claim is its own; deleteLocks deletes its claim. The grant has no lease: a transaction mutates
 * after checkLocks however long it takes.
 *
 * <p>The plug-in is the application: it retries an acquire (a new transaction) while another
 * instance's claim is senior, as an application retries a transaction that failed to lock.
 */
final class JanusGraphLocker implements Lock {
  /** The edge store's lock store, Backend's EDGESTORE_NAME + LOCK_STORE_SUFFIX. */
  static final String LOCK_STORE = "edgestore_lock_";

  private CQLStoreManager manager;
  private ConsistentKeyLocker locker;
  private ModifiableConfiguration config;
  /**
   * The transactions holding a lock, by lock name and owner: after an {@code info} the client goes
   * on as a new owner in this same process, and the old owner's transaction is abandoned, not
   * handed over (keyed by name alone, the new owner's first acquire took it as a heartbeat and its
   * release deleted the old owner's claim, which the history still counts as held).
   */
  private final Map<String, StoreTransaction> held = new HashMap<>();

  private static String heldKey(String name, String owner) {
    return name + "\u0000" + owner;
  }

  public static void main(String[] args) throws Exception {
    Protocol.serve(new JanusGraphLocker());
  }

  @Override
  public void setup(Env env, long deadline) throws Exception {
    config = GraphDatabaseConfiguration.buildGraphConfiguration();
    config.set(GraphDatabaseConfiguration.STORAGE_BACKEND, "cql");
    config.set(
        GraphDatabaseConfiguration.STORAGE_HOSTS,
        env.contacts().stream().map(a -> a.getHostString()).toArray(String[]::new));
    config.set(GraphDatabaseConfiguration.STORAGE_PORT, env.contacts().get(0).getPort());
    config.set(CQLConfigOptions.KEYSPACE, env.keyspace());
    if (env.dc() != null) config.set(CQLConfigOptions.LOCAL_DATACENTER, env.dc());
    // JanusGraph's own instance id: host name, process id and a counter (here 1).
    String host = InetAddress.getLocalHost().getHostName();
    long pid = ManagementFactory.getRuntimeMXBean().getPid();
    config.set(GraphDatabaseConfiguration.UNIQUE_INSTANCE_ID, host + "-" + pid + "-1");
    config.set(GraphDatabaseConfiguration.TIMESTAMP_PROVIDER, TimestampProviders.MICRO);
    config.set(GraphDatabaseConfiguration.LOCK_LOCAL_MEDIATOR_GROUP, env.keyspace());
    manager = new CQLStoreManager(config);
    // JanusGraph 1.0.1 creates a missing table WITH compression = {'sstable_compression': ...},
    // which Cassandra 5 refuses (it wants 'class'): the table is created first with JanusGraph's
    // columns and Cassandra's default compression, and openDatabase finds it.
    manager
        .getSession()
        .execute(
            SimpleStatement.newInstance(
                    "CREATE TABLE IF NOT EXISTS "
                        + env.keyspace()
                        + "."
                        + LOCK_STORE
                        + " (key blob, column1 blob, value blob, PRIMARY KEY (key, column1))")
                .setTimeout(Duration.ofSeconds(30)));
    // Its statements are prepared as the store opens: on a loaded test cluster a node may not
    // know the new table yet (the driver waits for schema agreement only so long).
    KeyColumnValueStore lockStore;
    while (true) {
      try {
        lockStore = manager.openDatabase(LOCK_STORE);
        break;
      } catch (RuntimeException e) {
        if (Lock.now() + 3000 > deadline) throw e;
        System.err.println("janusgraph: open " + LOCK_STORE + ": " + e + "; trying again");
        Lock.sleep(1000);
      }
    }
    locker = new ConsistentKeyLocker.Builder(lockStore, manager).fromConfig(config).build();
    System.err.println("janusgraph: this process's rid is " + host + "-" + pid + "-1");
  }

  private StoreTransaction begin() throws BackendException {
    return manager.beginTransaction(
        StandardBaseTransactionConfig.of(
            config.get(GraphDatabaseConfiguration.TIMESTAMP_PROVIDER),
            manager.getFeatures().getKeyConsistentTxConfig()));
  }

  /** A lock name as the (key, column) a graph transaction locks. */
  static KeyColumn keyColumn(String name) {
    return new KeyColumn(
        StaticArrayBuffer.of(name.getBytes(StandardCharsets.UTF_8)), StaticArrayBuffer.of(new byte[] {0}));
  }

  @Override
  public long acquire(String name, String owner, long deadline) throws Unknown, Failed {
    // A leader's heartbeat (this plug-in has no renew): the transaction still holds its lock.
    if (held.containsKey(heldKey(name, owner))) return NO_LEASE;
    KeyColumn kc = keyColumn(name);
    long poll = 5;
    while (true) {
      StoreTransaction tx;
      try {
        tx = begin();
      } catch (BackendException e) {
        throw new Failed("begin: " + e);
      }
      try {
        locker.writeLock(kc, tx);
      } catch (TemporaryLockingException e) {
        // Every try of the claim failed or took longer than lockWait ("Lock write retry count
        // exceeded"): JanusGraph deleted its claims (best effort) and the transaction fails; it
        // never acts on the lock, so this acquire did not grant it. A claim left behind only
        // blocks the others until it expires.
        rollback(tx);
        throw new Failed("writeLock: " + e + ": " + e.getCause());
      } catch (Exception e) {
        // A permanent storage error: JanusGraph tried to delete its claim and gave up.
        rollback(tx);
        throw new Unknown("writeLock: " + e);
      }
      try {
        locker.checkLocks(tx);
        held.put(heldKey(name, owner), tx);
        return NO_LEASE;
      } catch (TemporaryLockingException e) {
        // Another instance's claim is senior: the transaction fails and is rolled back (its
        // claim deleted); the application tries again.
        rollback(tx);
      } catch (Exception e) {
        rollback(tx);
        throw new Unknown("checkLocks: " + e);
      }
      long left = deadline - Lock.now();
      if (left <= 600) throw new Failed("another instance's claim was senior to the deadline");
      Lock.sleep(Math.min(ThreadLocalRandom.current().nextLong(poll) + 1, left - 600));
      poll = Math.min(poll * 2, 250);
    }
  }

  private void rollback(StoreTransaction tx) {
    try {
      locker.deleteLocks(tx);
    } catch (Exception e) {
      System.err.println("janusgraph: deleteLocks: " + e);
    }
    try {
      tx.rollback();
    } catch (Exception e) {
      System.err.println("janusgraph: rollback: " + e);
    }
  }

  @Override
  public void release(String name, String owner, long deadline) throws Unknown, Failed {
    StoreTransaction tx = held.remove(heldKey(name, owner));
    if (tx == null) throw new Failed("not held");
    try {
      // deleteSingleLock retries a time-out 3 times and gives up silently, as a commit's end does.
      locker.deleteLocks(tx);
      tx.commit();
    } catch (Exception e) {
      throw new Unknown("deleteLocks: " + e);
    }
  }
}
