// Package lease implements the TTL lease lock of "Consensus on Cassandra"
// (INSERT ... IF NOT EXISTS, UPDATE/DELETE ... IF owner=?), leader election on
// top of it, a fenced variant whose grants carry a growing token, and the racy
// read-then-write control lock.
package lease
