package lockcheck.locks;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Cassandra Reaper's leader election (a lead per segment or repair run), re-expressed over the
 * driver Reaper itself uses (DataStax driver 4). It follows thelastpickle/cassandra-reaper:
 *
 * <ul>
 *   <li>src/server/src/main/java/io/cassandrareaper/storage/cassandra/CassandraConcurrencyDao.java
 *       at b0c172a9bb0389d7fc76757172fa1c7c60d4fa0f (statements, QUORUM, LEAD_DURATION = 90 s as
 *       the TTL of take and renew, a renew or release not applied is logged and reported false,
 *       driver errors propagate);
 *   <li>src/server/src/main/resources/db/cassandra/034_init_reaper_db.cql at
 *       575145837044e62f9f48e0b5de7e7fb6fdc21297 (the leader table);
 *   <li>src/server/src/main/java/io/cassandrareaper/service/RepairManager.java at repository head
 *       8a4cf83df173911d965dc50f60924c01aa860d1c (taking a lead is takeLead || renewLead: an
 *       instance that already leads takes it again by renewing);
 *   <li>src/server/src/main/java/io/cassandrareaper/storage/cassandra/RetryPolicyImpl.java at
 *       e7f5dae52188d0b2343c3811563fd4576e860767 (only idempotent statements are retried: the
 *       LWTs never are).
 * </ul>
 *
 * Mapped onto the protocol: each process of the history (each owner) is a Reaper instance with a
 * random reaper_instance_id, as Reaper makes at start; a replacement process is an instance
 * restarted, so it gets an id of its own (sharing one made a client's replacement renew its
 * predecessor's lead, which the checker rightly counts as two owners holding); the lock name becomes the leader_id (a timeuuid column: a version-1 UUID
 * made from the name's hash); the TTL is the run's in whole seconds, rounded up, in place of 90.
 * Reaper keeps no clock of its own for a lead: it leads until a renew says otherwise. The grant's
 * lease_ms is the TTL counted from when the statement was sent: more than Reaper itself claims, and
 * still up to a second past the row's expiry, which Cassandra counts in whole seconds from the
 * replica's write (the catalogue's partition and kill rows show it). lockcheck's leader heartbeats
 * at a fraction of it, where Reaper renews as its repair goes on.
 */
final class ReaperLeader implements Lock {
  private CqlSession session;
  private PreparedStatement take, renew, release;
  private int ttl;
  private final Map<String, UUID> instanceIds = new ConcurrentHashMap<>();
  private String instanceHost;

  @Override
  public void setup(CqlSession session, String keyspace, Duration ttl, long deadline) {
    this.session = session;
    this.ttl = (int) Math.max(1, (ttl.toMillis() + 999) / 1000);
    try {
      instanceHost = InetAddress.getLocalHost().getHostAddress();
    } catch (Exception e) {
      instanceHost = "127.0.0.1";
    }
    session.execute(
        SimpleStatement.newInstance(
                "CREATE TABLE IF NOT EXISTS "
                    + keyspace
                    + ".leader (\n"
                    + "    leader_id timeuuid PRIMARY KEY,\n"
                    + "    last_heartbeat timestamp,\n"
                    + "    reaper_instance_host text,\n"
                    + "    reaper_instance_id uuid\n"
                    + ") WITH additional_write_policy = '99p'\n"
                    + "    AND bloom_filter_fp_chance = 0.1\n"
                    + "    AND caching = {'keys': 'ALL', 'rows_per_partition': 'NONE'}\n"
                    + "    AND cdc = false\n"
                    + "    AND comment = ''\n"
                    + "    AND compaction = {'class': 'org.apache.cassandra.db.compaction.LeveledCompactionStrategy', 'max_threshold': '32', 'min_threshold': '4'}\n"
                    + "    AND compression = {'chunk_length_in_kb': '16', 'class': 'org.apache.cassandra.io.compress.LZ4Compressor'}\n"
                    + "    AND crc_check_chance = 1.0\n"
                    + "    AND default_time_to_live = 600\n"
                    + "    AND gc_grace_seconds = 600\n"
                    + "    AND max_index_interval = 2048\n"
                    + "    AND memtable_flush_period_in_ms = 0\n"
                    + "    AND min_index_interval = 128")
            .setTimeout(Duration.ofMillis(Math.max(1000, deadline - Lock.now()))));
    String ks = keyspace + ".";
    take =
        Lock.prepare(session, deadline,
            SimpleStatement.builder(
                    "INSERT INTO " + ks + "leader(leader_id, reaper_instance_id,"
                        + "reaper_instance_host, last_heartbeat)"
                        + "VALUES(?, ?, ?, toTimestamp(now())) IF NOT EXISTS USING TTL ?")
                .setConsistencyLevel(ConsistencyLevel.QUORUM)
                .build());
    renew =
        Lock.prepare(session, deadline,
            SimpleStatement.builder(
                    "UPDATE " + ks + "leader USING TTL ? SET reaper_instance_id = ?, reaper_instance_host = ?,"
                        + " last_heartbeat = toTimestamp(now()) WHERE leader_id = ? IF reaper_instance_id = ?")
                .setConsistencyLevel(ConsistencyLevel.QUORUM)
                .build());
    release =
        Lock.prepare(session, deadline,
            SimpleStatement.builder("DELETE FROM " + ks + "leader WHERE leader_id = ? IF reaper_instance_id = ?")
                .setConsistencyLevel(ConsistencyLevel.QUORUM)
                .build());
  }

  /** The instance id of owner's Reaper, made at its first request, as Reaper makes one at start. */
  private UUID instance(String owner) {
    return instanceIds.computeIfAbsent(owner, o -> {
      UUID id = UUID.randomUUID();
      System.err.println("reaper: instance " + id + " (" + o + ") at " + instanceHost);
      return id;
    });
  }

  /** A version-1 (time) UUID fixed by the lock name: leader_id is a timeuuid. */
  static UUID leaderId(String name) {
    try {
      ByteBuffer b =
          ByteBuffer.wrap(MessageDigest.getInstance("SHA-256").digest(name.getBytes(StandardCharsets.UTF_8)));
      long msb = (b.getLong() & ~0xF000L) | 0x1000L; // version 1
      long lsb = (b.getLong() & 0x3FFFFFFFFFFFFFFFL) | 0x8000000000000000L; // IETF variant
      return new UUID(msb, lsb);
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  @Override
  public boolean renews() {
    return true;
  }

  private boolean takeLead(UUID id, UUID instanceId) {
    return session.execute(take.bind(id, instanceId, instanceHost, ttl)).wasApplied();
  }

  private boolean renewLead(UUID id, UUID instanceId) {
    boolean applied = session.execute(renew.bind(ttl, instanceId, instanceHost, id, instanceId)).wasApplied();
    if (!applied) System.err.println("reaper: failed to renew lead on " + id);
    return applied;
  }

  @Override
  public long acquire(String name, String owner, long deadline) throws Unknown, Failed {
    UUID id = leaderId(name);
    UUID me = instance(owner);
    RuntimeException error = null; // an attempt that threw: it may have taken the lead
    long poll = 5;
    while (true) {
      long start = Lock.now();
      try {
        if (takeLead(id, me) || renewLead(id, me)) return start + ttl * 1000L;
      } catch (RuntimeException e) {
        error = e;
      }
      long left = deadline - Lock.now();
      if (left <= 100) break;
      Lock.sleep(Math.min(ThreadLocalRandom.current().nextLong(poll) + 1, left - 100));
      poll = Math.min(poll * 2, 250);
    }
    if (error != null) throw new Unknown("gave up after an attempt that threw: " + error);
    throw new Failed("lead held by another instance");
  }

  @Override
  public long renew(String name, String owner, long deadline) throws Unknown, Failed {
    long start = Lock.now();
    boolean applied;
    try {
      applied = renewLead(leaderId(name), instance(owner));
    } catch (RuntimeException e) {
      throw new Unknown("renewLead: " + e);
    }
    if (!applied) throw new Failed("renewLead not applied: the lead is another's or gone");
    return start + ttl * 1000L;
  }

  @Override
  public void release(String name, String owner, long deadline) throws Unknown, Failed {
    boolean applied;
    try {
      applied = session.execute(release.bind(leaderId(name), instance(owner))).wasApplied();
    } catch (RuntimeException e) {
      throw new Unknown("releaseLead: " + e);
    }
    if (!applied) {
      System.err.println("reaper: could not release lead on " + leaderId(name));
      throw new Failed("releaseLead not applied");
    }
  }
}
