// Package checker judges a history: mutual exclusion, the lock object as a
// linearizable owner-aware mutex with leases (porcupine), the lock-protected
// resource, and statistics. A verdict needs only a history: this package never
// imports cluster, workload or nemesis.
package checker
