// Package temporal re-expresses Temporal's shard ownership on Cassandra as
// a lockcheck lock: a history host owns a shard by its range_id, and every
// write it makes in the shard's partition is a conditional batch that
// carries IF range_id = ? on the shard's row, so a host that lost the shard
// can no longer write anything (fencing kept in the data).
//
// Followed: temporalio/temporal at commit
// 6805caea59e35d0611ed96be69641b8d86bff11c:
//   - schema/cassandra/temporal/schema.cql: the executions table (kept
//     with the columns this lock touches; primary key word for word);
//   - common/persistence/cassandra/shard_store.go: GetOrCreateShard (a
//     plain read of the shard row, then INSERT ... IF NOT EXISTS when
//     missing) and UpdateShard (UPDATE ... SET shard, shard_encoding,
//     range_id ... IF range_id = ?; not applied = ShardOwnershipLostError);
//   - service/history/shard/context_impl.go, renewRangeLocked: taking
//     (stealing) a shard bumps RangeId by one from the range id read;
//   - common/persistence/cassandra/mutable_state_store.go: every execution
//     write is a logged batch of the execution's own conditional statement
//     (templateCreateWorkflowExecutionQuery IF NOT EXISTS, or
//     templateUpdateWorkflowExecutionQuery IF db_record_version = ?) and
//     templateUpdateLeaseQuery (SET range_id = ? ... IF range_id = ?);
//   - common/persistence/cassandra/execution_store.go: the shard row's
//     constant keys (type 0, the 10000000-1000-... ids, task_id -11) and
//     the execution row's (type 1, task_id -10), visibility_ts 2000-01-01;
//   - common/config: LOCAL_QUORUM and LOCAL_SERIAL by default.
//
// What lockcheck maps: a lock name is a shard (shard_id = FNV-32a of the
// name, positive), a grant is ownership with the new range_id as its
// fencing token, and the lock-protected set is one workflow execution of
// that shard (its execution blob holds the elements), written only through
// the lock (workload.FencedWriter). Ownership has no lease and no TTL: a
// host keeps a shard until another host steals it (in Temporal, when the
// membership ring moves the shard), so Acquire always steals and holds
// overlap by design: the promise is fenced. Release writes nothing, as a
// host that unloads a shard writes nothing. The shard blob, a ShardInfo
// protobuf in Temporal, is JSON here ({"shard_id","range_id","owner"}) with
// shard_encoding "json"; the execution blob is the set as JSON.
package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"time"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/history"
	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
)

// The constant keys of Temporal's rows (execution_store.go).
const (
	rowTypeShard            = 0
	rowTypeExecution        = 1
	rowTypeShardNamespaceID = "10000000-1000-f000-f000-000000000000"
	rowTypeShardWorkflowID  = "20000000-1000-f000-f000-000000000000"
	rowTypeShardRunID       = "30000000-1000-f000-f000-000000000000"
	rowTypeExecutionTaskID  = int64(-10)
	rowTypeShardTaskID      = int64(-11)
	// The namespace and run of the one execution per shard that holds the
	// protected set (lockcheck's choice, not Temporal's).
	setNamespaceID = "7e3e1a5c-0000-4000-8000-000000000001"
	setRunID       = "7e3e1a5c-0000-4000-8000-000000000002"
)

// defaultVisibilityTimestamp is 2000-01-01T00:00:00Z, the visibility_ts of
// rows that are not timer tasks.
var defaultVisibilityTimestamp = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// The statements, word for word from Temporal's store (the templates'
// names are Temporal's); only the keyspace qualifier is added.
const (
	templateCreateShardQuery = `INSERT INTO %s (` +
		`shard_id, type, namespace_id, workflow_id, run_id, visibility_ts, task_id, shard, shard_encoding, range_id)` +
		`VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS`

	templateGetShardQuery = `SELECT shard, shard_encoding ` +
		`FROM %s ` +
		`WHERE shard_id = ? ` +
		`and type = ? ` +
		`and namespace_id = ? ` +
		`and workflow_id = ? ` +
		`and run_id = ? ` +
		`and visibility_ts = ? ` +
		`and task_id = ?`

	templateUpdateShardQuery = `UPDATE %s ` +
		`SET shard = ?, shard_encoding = ?, range_id = ? ` +
		`WHERE shard_id = ? ` +
		`and type = ? ` +
		`and namespace_id = ? ` +
		`and workflow_id = ? ` +
		`and run_id = ? ` +
		`and visibility_ts = ? ` +
		`and task_id = ? ` +
		`IF range_id = ?`

	templateUpdateLeaseQuery = `UPDATE %s ` +
		`SET range_id = ? ` +
		`WHERE shard_id = ? ` +
		`and type = ? ` +
		`and namespace_id = ? ` +
		`and workflow_id = ? ` +
		`and run_id = ? ` +
		`and visibility_ts = ? ` +
		`and task_id = ? ` +
		`IF range_id = ?`

	templateCreateWorkflowExecutionQuery = `INSERT INTO %s (` +
		`shard_id, namespace_id, workflow_id, run_id, type, ` +
		`execution, execution_encoding, execution_state, execution_state_encoding, next_event_id, db_record_version, ` +
		`visibility_ts, task_id, checksum, checksum_encoding) ` +
		`VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) IF NOT EXISTS `

	templateUpdateWorkflowExecutionQuery = `UPDATE %s ` +
		`SET execution = ? ` +
		`, execution_encoding = ? ` +
		`, execution_state = ? ` +
		`, execution_state_encoding = ? ` +
		`, next_event_id = ? ` +
		`, db_record_version = ? ` +
		`, checksum = ? ` +
		`, checksum_encoding = ? ` +
		`WHERE shard_id = ? ` +
		`and type = ? ` +
		`and namespace_id = ? ` +
		`and workflow_id = ? ` +
		`and run_id = ? ` +
		`and visibility_ts = ? ` +
		`and task_id = ? ` +
		`IF db_record_version = ? `

	templateGetWorkflowExecutionQuery = `SELECT execution, execution_encoding, db_record_version ` +
		`FROM %s ` +
		`WHERE shard_id = ? ` +
		`and type = ? ` +
		`and namespace_id = ? ` +
		`and workflow_id = ? ` +
		`and run_id = ? ` +
		`and visibility_ts = ? ` +
		`and task_id = ?`
)

// Recipes are this package's locks, for `lockcheck run --lock NAME`.
var Recipes = []recipe.Entry{
	{Name: "temporal-shard", Promise: history.PromiseFenced, New: recipe.Constructor(New), Schema: CreateSchema,
		NewResource: NewResource,
		Does: "Temporal's shard ownership (temporalio/temporal 6805cae): taking a shard reads it and bumps `range_id` with " +
			"`UPDATE executions ... IF range_id = ?`; every write is a logged batch of the execution's own LWT and " +
			"`UPDATE executions SET range_id = ? ... IF range_id = ?` in the shard's partition (LOCAL_QUORUM, LOCAL_SERIAL); no lease, a shard is stolen",
		Fails: "holds overlap by design (a shard is stolen, not waited for); a stale owner's writes are refused in the same Paxos round",
	},
}

// CreateSchema creates Temporal's executions table (the columns this lock
// uses; the primary key is Temporal's) if it does not exist.
func CreateSchema(ctx context.Context, s *gocql.Session, keyspace string) error {
	t, err := recipe.Table(keyspace, "executions")
	if err != nil {
		return err
	}
	q := `CREATE TABLE IF NOT EXISTS ` + t + ` (
  shard_id int, type int, namespace_id uuid, workflow_id text, run_id uuid, current_run_id uuid,
  visibility_ts timestamp, task_id bigint, shard blob, shard_encoding text,
  execution blob, execution_encoding text, execution_state blob, execution_state_encoding text,
  next_event_id bigint, range_id bigint, checksum blob, checksum_encoding text, db_record_version bigint,
  PRIMARY KEY (shard_id, type, namespace_id, workflow_id, run_id, visibility_ts, task_id))`
	if err := s.Query(q).ExecContext(ctx); err != nil {
		return fmt.Errorf("temporal schema: %w", err)
	}
	return s.AwaitSchemaAgreement(ctx)
}

// Shard is one client's history host: it owns shards by range id.
type Shard struct {
	s     *gocql.Session
	table string
	log   func(msg string, args ...any)
}

// Option configures a Shard: the shared options of package recipe.
type Option = recipe.Option

// New returns a client's shard owner.
func New(s *gocql.Session, opts ...Option) (*Shard, error) {
	o := recipe.Defaults()
	if err := recipe.Configure(&o, &struct{}{}, opts); err != nil {
		return nil, fmt.Errorf("temporal: %w", err)
	}
	t, err := recipe.Table(o.Keyspace, "executions")
	if err != nil {
		return nil, fmt.Errorf("temporal: %w", err)
	}
	return &Shard{s: s, table: t, log: o.Log.Debug}, nil
}

var _ interface {
	workload.Lock
	workload.FencedWriter
} = (*Shard)(nil)

// ShardID is the shard a lock name stands for.
func ShardID(name string) int32 {
	h := fnv.New32a()
	h.Write([]byte(name))
	return int32(h.Sum32() & 0x7fffffff)
}

// shardInfo stands for Temporal's ShardInfo blob.
type shardInfo struct {
	ShardID int32  `json:"shard_id"`
	RangeID int64  `json:"range_id"`
	Owner   string `json:"owner"`
}

func (s *Shard) q(stmt string, values ...any) *gocql.Query {
	return s.s.Query(fmt.Sprintf(stmt, s.table), values...).
		Consistency(gocql.LocalQuorum).SerialConsistency(gocql.LocalSerial).Idempotent(false).RetryPolicy(nil)
}

// Acquire takes the shard: GetOrCreateShard, then renewRangeLocked's
// UpdateShard with the range id read plus one. A range id that moved
// between the read and the update is a lost race (ShardOwnershipLost): a
// definite miss, as in Temporal, where the shard controller tries later.
// The grant's token is the new range id; the grant does not expire.
func (s *Shard) Acquire(ctx context.Context, name, owner string) (workload.Grant, error) {
	id := ShardID(name)
	info, err := s.getOrCreate(ctx, id, owner)
	if err != nil {
		return workload.Grant{}, fmt.Errorf("acquire %q: %w", name, err)
	}
	prev := info.RangeID
	info.RangeID++
	info.Owner = owner
	blob, _ := json.Marshal(info)
	cur := map[string]any{}
	applied, err := s.q(templateUpdateShardQuery, blob, "json", info.RangeID,
		id, rowTypeShard, rowTypeShardNamespaceID, rowTypeShardWorkflowID, rowTypeShardRunID,
		defaultVisibilityTimestamp, rowTypeShardTaskID, prev).MapScanCASContext(ctx, cur)
	if err != nil {
		return workload.Grant{}, fmt.Errorf("acquire %q: update shard: %w", name, workload.ClassifyLWT(err))
	}
	if !applied {
		return workload.Grant{}, fmt.Errorf("acquire %q: shard ownership lost: previous range id %d, found %v: %w",
			name, prev, cur["range_id"], workload.ErrNotAcquired)
	}
	return workload.Grant{Lock: name, Owner: owner, Token: info.RangeID, Stealable: true}, nil
}

// getOrCreate reads the shard row; a missing one is created (range id 0)
// with IF NOT EXISTS, and read again when another host created it first.
func (s *Shard) getOrCreate(ctx context.Context, id int32, owner string) (shardInfo, error) {
	for range 2 {
		var data []byte
		var enc string
		err := s.q(templateGetShardQuery, id, rowTypeShard, rowTypeShardNamespaceID, rowTypeShardWorkflowID,
			rowTypeShardRunID, defaultVisibilityTimestamp, rowTypeShardTaskID).ScanContext(ctx, &data, &enc)
		if err == nil {
			var info shardInfo
			if err := json.Unmarshal(data, &info); err != nil {
				return shardInfo{}, fmt.Errorf("shard %d: %s blob: %v: %w", id, enc, err, workload.ErrNotAcquired)
			}
			return info, nil
		}
		if !errors.Is(err, gocql.ErrNotFound) {
			return shardInfo{}, fmt.Errorf("get shard %d: %w: %w", id, workload.ErrNotAcquired, err)
		}
		info := shardInfo{ShardID: id, Owner: owner}
		blob, _ := json.Marshal(info)
		applied, err := s.q(templateCreateShardQuery, id, rowTypeShard, rowTypeShardNamespaceID, rowTypeShardWorkflowID,
			rowTypeShardRunID, defaultVisibilityTimestamp, rowTypeShardTaskID, blob, "json", int64(0)).
			MapScanCASContext(ctx, map[string]any{})
		if err != nil {
			// Creating the shard row at range id 0 grants nothing.
			return shardInfo{}, fmt.Errorf("create shard %d: %w: %w", id, workload.ErrNotAcquired, err)
		}
		if applied {
			return info, nil
		}
	}
	return shardInfo{}, fmt.Errorf("shard %d: created and not found: %w", id, workload.ErrNotAcquired)
}

// Release lets the shard go. Temporal's host writes nothing when it
// unloads a shard: the next owner's range bump is what ends this one.
func (s *Shard) Release(ctx context.Context, g workload.Grant) error { return nil }

// WriteFenced is one write of the shard's owner: read the execution (the
// protected set) at LOCAL_QUORUM, then one logged batch of the execution's
// conditional write and the range-id check on the shard row. A batch not
// applied because the range id moved is ShardOwnershipLost (ErrStaleToken);
// one not applied because the execution's db_record_version moved (no
// other writer of this shard should exist) is a definite failure too.
func (s *Shard) WriteFenced(ctx context.Context, g workload.Grant, elem int64, beforeWrite func(context.Context) error) error {
	id := ShardID(g.Lock)
	elems, version, exists, err := s.readSet(ctx, g.Lock)
	if err != nil {
		return fmt.Errorf("write: %w", err)
	}
	if beforeWrite != nil {
		if err := beforeWrite(ctx); err != nil {
			return fmt.Errorf("write: before write: %w", err)
		}
	}
	if !slices.Contains(elems, elem) {
		elems = append(elems, elem)
	}
	blob, _ := json.Marshal(elems)
	b := s.s.Batch(gocql.LoggedBatch).Consistency(gocql.LocalQuorum).SerialConsistency(gocql.LocalSerial).RetryPolicy(nil)
	if exists {
		b.Query(fmt.Sprintf(templateUpdateWorkflowExecutionQuery, s.table), blob, "json", []byte(nil), "", version+1, version+1,
			[]byte(nil), "", id, rowTypeExecution, setNamespaceID, g.Lock, setRunID, defaultVisibilityTimestamp,
			rowTypeExecutionTaskID, version)
	} else {
		b.Query(fmt.Sprintf(templateCreateWorkflowExecutionQuery, s.table), id, setNamespaceID, g.Lock, setRunID, rowTypeExecution,
			blob, "json", []byte(nil), "", int64(1), int64(1), defaultVisibilityTimestamp, rowTypeExecutionTaskID, []byte(nil), "")
	}
	b.Query(fmt.Sprintf(templateUpdateLeaseQuery, s.table), g.Token, id, rowTypeShard, rowTypeShardNamespaceID,
		rowTypeShardWorkflowID, rowTypeShardRunID, defaultVisibilityTimestamp, rowTypeShardTaskID, g.Token)
	cur := map[string]any{}
	applied, iter, err := b.MapExecCASContext(ctx, cur)
	if err != nil {
		return fmt.Errorf("write: %w", workload.ClassifyLWT(err))
	}
	conflicts := []map[string]any{cur}
	for row := map[string]any{}; iter != nil && iter.MapScan(row); row = map[string]any{} {
		conflicts = append(conflicts, row)
	}
	if iter != nil {
		_ = iter.Close()
	}
	if applied {
		return nil
	}
	for _, c := range conflicts {
		if t, ok := c["type"].(int); ok && t == rowTypeShard {
			if r, ok := c["range_id"].(int64); ok && r != g.Token {
				return fmt.Errorf("write: shard ownership lost, request range id %d, actual %d: %w", g.Token, r, workload.ErrStaleToken)
			}
		}
	}
	return fmt.Errorf("write: execution condition failed (db_record_version %d): %w", version, workload.ErrStaleToken)
}

// readSet reads the shard's execution: its elements and db_record_version.
func (s *Shard) readSet(ctx context.Context, name string) (elems []int64, version int64, exists bool, err error) {
	return readExecution(ctx, s.s, s.table, name)
}

func readExecution(ctx context.Context, sess *gocql.Session, table, name string) ([]int64, int64, bool, error) {
	var data []byte
	var enc string
	var version *int64
	err := sess.Query(fmt.Sprintf(templateGetWorkflowExecutionQuery, table), ShardID(name), rowTypeExecution, setNamespaceID,
		name, setRunID, defaultVisibilityTimestamp, rowTypeExecutionTaskID).Consistency(gocql.LocalQuorum).
		ScanContext(ctx, &data, &enc, &version)
	if errors.Is(err, gocql.ErrNotFound) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, workload.ClassifyRead(err)
	}
	var elems []int64
	if len(data) > 0 {
		if err := json.Unmarshal(data, &elems); err != nil {
			return nil, 0, false, fmt.Errorf("execution of %q: %s blob: %w", name, enc, err)
		}
	}
	slices.Sort(elems)
	var v int64
	if version != nil {
		v = *version
	}
	return elems, v, true, nil
}

// Resource reads the protected sets where WriteFenced writes them: the
// lockcheck run's final reads go through it.
type Resource struct {
	s     *gocql.Session
	table string
}

// NewResource is the entry's resource: the executions table of keyspace.
func NewResource(s *gocql.Session, keyspace string) (workload.Resource, error) {
	t, err := recipe.Table(keyspace, "executions")
	if err != nil {
		return nil, err
	}
	return &Resource{s: s, table: t}, nil
}

// Read reads the lock's set at LOCAL_QUORUM.
func (r *Resource) Read(ctx context.Context, lock string) ([]int64, error) {
	elems, _, _, err := readExecution(ctx, r.s, r.table, lock)
	return elems, err
}

// errThroughLock: the set of a lock with its fencing in the data is
// written by the lock (WriteFenced), never beside it.
var errThroughLock = errors.New("temporal: the protected set is written through the lock (workload.FencedWriter)")

// Add refuses: see errThroughLock.
func (r *Resource) Add(context.Context, string, int64, int64, func(context.Context) error) error {
	return errThroughLock
}
