// Package register is the register workload's compare-and-set register on
// Cassandra: one row per key, read at SERIAL, written with LWTs (INSERT ...
// IF NOT EXISTS, UPDATE ... IF value = ?). It is Cassandra's LWT itself,
// with no lock on top: the ground a lock's verdict stands on
// (workload.ShapeRegister, docs/history.md).
package register

import (
	"context"
	"errors"
	"fmt"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/recipe"
	"github.com/lockcheck/lockcheck/workload"
)

// Table is the register's table in the run's keyspace.
const Table = "lwt_register"

// CreateSchema creates the register's table if it does not exist.
func CreateSchema(ctx context.Context, s *gocql.Session, keyspace string) error {
	t, err := recipe.Table(keyspace, Table)
	if err != nil {
		return err
	}
	return recipe.CreateTables(ctx, s, "register schema", `CREATE TABLE IF NOT EXISTS `+t+` (key text PRIMARY KEY, value bigint)`)
}

// Register is a workload.Register on one session.
type Register struct {
	s     *gocql.Session
	table string
}

var _ workload.Register = (*Register)(nil)

// New makes a register on s in keyspace (CreateSchema made its table).
func New(s *gocql.Session, keyspace string) (*Register, error) {
	t, err := recipe.Table(keyspace, Table)
	if err != nil {
		return nil, err
	}
	return &Register{s: s, table: t}, nil
}

// Read reads key at SERIAL: a Paxos round, linearizable with the LWTs
// (unless CASSANDRA-12126's fix is switched off).
func (r *Register) Read(ctx context.Context, key string) (int64, bool, error) {
	var v *int64
	err := r.s.Query(`SELECT value FROM `+r.table+` WHERE key = ?`, key).
		Consistency(gocql.Serial).Idempotent(false).RetryPolicy(nil).ScanContext(ctx, &v)
	if errors.Is(err, gocql.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read %q: %w", key, workload.ClassifyRead(err))
	}
	if v == nil {
		return 0, false, nil
	}
	return *v, true, nil
}

// Insert writes v when key has no row; not applied, it returns the row's
// value.
func (r *Register) Insert(ctx context.Context, key string, v int64) (bool, int64, bool, error) {
	var k *string
	var cur *int64
	applied, err := workload.LWT(r.s.Query(`INSERT INTO `+r.table+` (key, value) VALUES (?, ?) IF NOT EXISTS`, key, v)).
		ScanCASContext(ctx, &k, &cur)
	return result(key, applied, cur, err)
}

// CAS writes v when key holds expect; not applied, it returns what key
// held (no row: Cassandra returns the [applied] column alone, or a null
// value).
func (r *Register) CAS(ctx context.Context, key string, expect, v int64) (bool, int64, bool, error) {
	var cur *int64
	applied, err := workload.LWT(r.s.Query(`UPDATE `+r.table+` SET value = ? WHERE key = ? IF value = ?`, v, key, expect)).
		ScanCASContext(ctx, &cur)
	return result(key, applied, cur, err)
}

// Delete removes key's row when it holds expect; not applied, it returns
// what key held (no row: the [applied] column alone, or a null value).
func (r *Register) Delete(ctx context.Context, key string, expect int64) (bool, int64, bool, error) {
	var cur *int64
	applied, err := workload.LWT(r.s.Query(`DELETE FROM `+r.table+` WHERE key = ? IF value = ?`, key, expect)).
		ScanCASContext(ctx, &cur)
	return result(key, applied, cur, err)
}

func result(key string, applied bool, cur *int64, err error) (bool, int64, bool, error) {
	if err != nil {
		return false, 0, false, fmt.Errorf("write %q: %w", key, workload.ClassifyLWT(err))
	}
	if applied || cur == nil {
		return applied, 0, false, nil
	}
	return false, *cur, true, nil
}
