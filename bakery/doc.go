// Package bakery implements Lamport's bakery algorithm over two Cassandra
// tables, Choosing and Numbers, at QUORUM (bakery) or ONE (bakery-one).
package bakery
