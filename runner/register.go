package runner

import (
	"context"
	"errors"
	"fmt"

	gocql "github.com/apache/cassandra-gocql-driver/v2"

	"github.com/lockcheck/lockcheck/register"
	"github.com/lockcheck/lockcheck/workload"
)

// RegisterName is the name a register run records as its lock (meta.lock):
// the register workload tests Cassandra's LWT itself, no lock.
const RegisterName = "register"

// RegisterRecipe is what Test.Recipe holds for the register workload
// (workload.ShapeRegister): a name and no lock; the runner sets the
// register up itself (setupRegister).
func RegisterRecipe() Recipe { return Recipe{Name: RegisterName} }

// setupRegister creates the register's table on env and gives each client
// a register on the shared session, or on its coordinator's with pinned
// clients; final is the register of the final reads (the shared session).
func setupRegister(ctx context.Context, env Env, t *Test) (newReg workload.NewRegisterFunc, final workload.Register, closeFn func(), err error) {
	if env == nil {
		return nil, nil, nil, errors.New("the register workload needs a Cassandra cluster")
	}
	s, err := env.Session(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	ks := env.Keyspace()
	if err := register.CreateSchema(ctx, s, ks); err != nil {
		s.Close()
		return nil, nil, nil, err
	}
	shared, err := register.New(s, ks)
	if err != nil {
		s.Close()
		return nil, nil, nil, err
	}
	closeFn = s.Close
	sessionOf := func(int) *gocql.Session { return s }
	if t.pins != nil {
		pinned, closePinned, err := nodeSessions(ctx, env, t.pins)
		if err != nil {
			s.Close()
			return nil, nil, nil, err
		}
		closeFn = func() { closePinned(); s.Close() }
		sessionOf = func(client int) *gocql.Session { return pinned[t.pins[client]] }
	}
	newReg = func(client int) (workload.Register, error) {
		r, err := register.New(sessionOf(client), ks)
		if err != nil {
			return nil, fmt.Errorf("register: %w", err)
		}
		return r, nil
	}
	return newReg, shared, closeFn, nil
}
