package lockcheck.artifacts;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DriverTimeoutException;
import com.datastax.oss.driver.api.core.CqlSessionBuilder;
import com.datastax.oss.driver.api.core.config.DefaultDriverOption;
import com.datastax.oss.driver.api.core.config.DriverConfigLoader;
import com.datastax.oss.driver.api.core.config.ProgrammaticDriverConfigLoaderBuilder;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.cognitor.cassandra.migration.LockcheckDatabase;
import org.cognitor.cassandra.migration.MigrationTask;

/**
 * cassandra-migration's leader lock as released: org.cognitor.cassandra:cassandra-migration
 * 2.6.1_v4 from Maven Central (source: github.com/patka/cassandra-migration), driven through its
 * public API, {@code new MigrationTask(database, repository, true).migrate()}: nothing of the lock
 * is re-expressed. What 2.6.1_v4's Database does, read from its sources jar: take the lead with
 * {@code INSERT INTO schema_migration_leader (keyspace_name, leader, took_lead_at,
 * leader_hostname) VALUES (?, ?, toTimestamp(now()), ?) IF NOT EXISTS USING TTL 300} at QUORUM
 * (serial: the driver's default, SERIAL), leader = a random UUID per Database instance; when not
 * applied, sleep 10 s and try again for as long as the schema is behind the scripts; never renew;
 * after the scripts, {@code DELETE FROM schema_migration_leader where keyspace_name = ? IF leader
 * = ?} at QUORUM, whose "not applied" it only logs. The TTL and the wait are constants compiled
 * into the class; the application never learns of the TTL: migrate() runs every script to the
 * end however long it takes.
 *
 * <p>The plug-in is the application. An acquire starts a migration in a thread of its own; the
 * repository holds one script (lockcheck/migration/1_critical_section.cql), and the Database's
 * execute of it, which in the library runs the script's CQL and records the new version, here
 * answers the acquire and waits for the release request instead: lockcheck's client does its
 * critical section while the migration "runs". The release lets execute return; migrate() then
 * releases the lead itself. The version is never recorded, so every migration finds the schema
 * behind and takes the lead. The lock's key is the keyspace's name (one migration lock per
 * keyspace): {@link #getKeyspaceName} gives each of lockcheck's lock names its own, in the run's
 * keyspace. The grant has no lease: nothing tells the application that the lead ran out.
 */
final class CassandraMigration implements Lock {
  private CqlSession session;
  private Env env;
  /** One Database per lock name, as one per migrated keyspace: its leader UUID is this process's. */
  private final Map<String, LockcheckDatabase> databases = new HashMap<>();
  /** The migrations in flight by lock name: each holds the lead until released. */
  private final Map<String, Migration> running = new HashMap<>();

  public static void main(String[] args) throws Exception {
    Protocol.serve(new CassandraMigration());
  }

  @Override
  public void setup(Env env, long deadline) {
    this.env = env;
    session = session(env);
    // The Database's constructor creates schema_migration and schema_migration_leader (CREATE
    // TABLE IF NOT EXISTS, at QUORUM) and prepares its statements, within the driver's 2 s
    // request time-out, which a schema change on a loaded test cluster can outlast. The statements
    // are idempotent: a time-out is tried again until the set-up's deadline, as an operator would
    // start the tool again; the lock's own statements keep the driver's defaults.
    while (true) {
      try {
        database("setup");
        return;
      } catch (DriverTimeoutException e) {
        if (Lock.now() + 3000 > deadline) throw e;
        System.err.println("cassandra-migration: creating its tables: " + e + "; trying again");
        Lock.sleep(1000);
      }
    }
  }

  private LockcheckDatabase database(String name) {
    return databases.computeIfAbsent(name, n -> new LockcheckDatabase(session, env.keyspace(), n));
  }

  @Override
  public long acquire(String name, String owner, long deadline) throws Unknown, Failed {
    Migration prev = running.get(name);
    if (prev != null && !prev.finished()) {
      // Not re-entrant: a second migrate() of this Database would find its own lead row, log
      // "locked by another instance" and poll every 10 s until the first gives the lead back
      // (takeLeadOnMigrations has no check of the row's leader). Nothing is taken; the first
      // migration keeps the lead.
      throw new Failed(
          "a migration of this process holds or seeks the lead: cassandra-migration is not re-entrant, a second "
              + "migrate() waits for the first to give the lead back");
    }
    running.remove(name);
    LockcheckDatabase db = database(name);
    Migration m = new Migration(db);
    running.put(name, m);
    m.start();
    // Leave time to stop the migration's thread and to hear how it ended.
    long wait = deadline - Lock.now() - 2500;
    try {
      m.granted.get(Math.max(0, wait), TimeUnit.MILLISECONDS);
      return NO_LEASE;
    } catch (TimeoutException e) {
      // Not granted yet: stop the migration. In its 10 s wait the interrupt ends it with no lead;
      // in its LWT the driver finishes the request first, and a lead taken then is given back by
      // migrate() itself (execute sees the stop and returns at once).
      m.stop();
      if (!m.join(deadline - Lock.now())) {
        throw new Unknown("the migration was still taking the lead at the deadline");
      }
      running.remove(name);
      if (m.tookLead) throw new Unknown("the lead was taken as the acquire gave up, and given back");
      if (m.error != null && !(m.error instanceof IllegalStateException && m.stopped)) {
        throw new Unknown("migrate threw: " + m.error);
      }
      throw new Failed("not the leader before the deadline (cassandra-migration retries every 10 s)");
    } catch (java.util.concurrent.ExecutionException e) {
      running.remove(name);
      // migrate() threw before the script ran: a read or the LWT failed; the LWT may have applied
      // (a time-out), and the lead, if taken, was given back by migrate's finally.
      throw new Unknown("migrate threw: " + e.getCause());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new Unknown("interrupted");
    }
  }

  @Override
  public void release(String name, String owner, long deadline) throws Unknown, Failed {
    Migration m = running.get(name);
    if (m == null || !m.tookLead) throw new Failed("not held");
    m.finish.countDown();
    if (!m.join(deadline - Lock.now() - 200)) {
      throw new Unknown("migrate() had not given the lead back by the deadline");
    }
    running.remove(name);
    // cassandra-migration logs, and does not say, whether its DELETE ... IF leader = ? applied.
    if (m.error != null) throw new Unknown("migrate threw while giving the lead back: " + m.error);
  }

  /** One migrate() call, in a thread of its own, holding the lead while its script "runs". */
  private static final class Migration {
    final CompletableFuture<Void> granted = new CompletableFuture<>();
    final CountDownLatch finish = new CountDownLatch(1);
    final LockcheckDatabase db;
    final Thread thread;
    volatile boolean tookLead, stopped;
    volatile Throwable error;

    Migration(LockcheckDatabase db) {
      this.db = db;
      thread = new Thread(this::run, "migration");
      thread.setDaemon(true);
    }

    void start() {
      thread.start();
    }

    private void run() {
      db.onScript(this::critical);
      try {
        new MigrationTask(db, db.repository(), true).migrate();
      } catch (Throwable t) {
        error = t;
        granted.completeExceptionally(t);
      } finally {
        db.onScript(null);
        // migrate() returned without running the script: the schema was up to date or the lead
        // was never taken.
        granted.completeExceptionally(new IllegalStateException("migrate returned without the lead"));
      }
    }

    void stop() {
      stopped = true;
      finish.countDown();
      thread.interrupt();
    }

    boolean join(long ms) {
      try {
        thread.join(Math.max(1, ms));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return !thread.isAlive();
    }

    /**
     * The script's run: reached only with the lead taken (MigrationTask runs scripts after
     * takeLeadOnMigrations answered true). Answers the acquire, then waits for the release.
     */
    void critical() {
      tookLead = true;
      if (stopped) return;
      granted.complete(null);
      try {
        finish.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }

    boolean finished() {
      return !thread.isAlive();
    }
  }

  /**
   * The application's session: the driver's defaults (request time-out 2 s), schema time-outs
   * long enough for a loaded test cluster, and a pinned client's one coordinator.
   */
  @SuppressWarnings("deprecation") // withNodeFilter: the simplest way to keep to one coordinator
  static CqlSession session(Env env) {
    ProgrammaticDriverConfigLoaderBuilder config =
        DriverConfigLoader.programmaticBuilder()
            .withDuration(DefaultDriverOption.CONNECTION_INIT_QUERY_TIMEOUT, Duration.ofSeconds(10))
            .withDuration(DefaultDriverOption.METADATA_SCHEMA_REQUEST_TIMEOUT, Duration.ofSeconds(10))
            .withDuration(DefaultDriverOption.CONTROL_CONNECTION_AGREEMENT_TIMEOUT, Duration.ofSeconds(30));
    if (env.dc() == null) {
      config.withString(DefaultDriverOption.LOAD_BALANCING_POLICY_CLASS, "DcInferringLoadBalancingPolicy");
    }
    List<InetSocketAddress> contacts =
        env.contacts().stream().map(a -> new InetSocketAddress(a.getHostString(), a.getPort())).toList();
    CqlSessionBuilder b = CqlSession.builder().addContactPoints(contacts).withConfigLoader(config.build());
    if (env.dc() != null) b.withLocalDatacenter(env.dc());
    if (env.pin() != null) {
      InetSocketAddress p = contacts.get(0);
      b.withNodeFilter(
          n ->
              n.getBroadcastRpcAddress()
                  .map(a -> a.getAddress().equals(p.getAddress()) && a.getPort() == p.getPort())
                  .orElse(false));
    }
    return b.build();
  }
}
