package recipe

import (
	"context"
	"errors"
	"fmt"

	gocql "github.com/apache/cassandra-gocql-driver/v2"
)

// schemaTries bounds the attempts of one schema statement that ends in a
// client-side timeout.
const schemaTries = 4

// ddl is what CreateTables needs of a session: a statement and the wait for
// every node to agree on the schema (a *gocql.Session through gocqlDDL).
type ddl interface {
	exec(ctx context.Context, stmt string) error
	awaitAgreement(ctx context.Context) error
}

type gocqlDDL struct{ s *gocql.Session }

func (g gocqlDDL) exec(ctx context.Context, stmt string) error {
	return g.s.Query(stmt).ExecContext(ctx)
}

func (g gocqlDDL) awaitAgreement(ctx context.Context) error { return g.s.AwaitSchemaAgreement(ctx) }

// CreateTables runs schema statements that must be idempotent (CREATE ...
// IF NOT EXISTS), one after another, then waits for schema agreement. A
// statement whose answer does not come within the session's timeout is
// tried again, up to 4 times: on a loaded machine a schema change on
// Cassandra 4.x takes longer than the client waits (10 s) and still
// happens. Before each retry every node must agree on the schema, so that
// the retry, on whichever coordinator, sees the table the timed-out
// attempt made instead of making a second one with another id (two
// concurrent CREATE TABLEs of one table can disagree on it). what names
// the schema in errors ("lease schema").
func CreateTables(ctx context.Context, s *gocql.Session, what string, stmts ...string) error {
	return createTables(ctx, gocqlDDL{s}, what, stmts)
}

func createTables(ctx context.Context, s ddl, what string, stmts []string) error {
	for _, q := range stmts {
		var err error
		for try := 1; ; try++ {
			err = s.exec(ctx, q)
			if err == nil || !errors.Is(err, gocql.ErrTimeoutNoResponse) || try == schemaTries || ctx.Err() != nil {
				break
			}
			if aerr := s.awaitAgreement(ctx); aerr != nil {
				err = fmt.Errorf("%w (then no schema agreement: %w)", err, aerr)
				break
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
	}
	if err := s.awaitAgreement(ctx); err != nil {
		return fmt.Errorf("%s: schema agreement: %w", what, err)
	}
	return nil
}
