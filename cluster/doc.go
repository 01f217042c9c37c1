// Package cluster builds the Cassandra node image and runs an N-node Cassandra
// cluster on a Docker network that lockcheck creates and labels, with node
// handles the nemesis uses to pause, kill, partition and skew nodes.
//
// It imports no other package of the project.
package cluster
