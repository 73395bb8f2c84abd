// Package sweeper elects the one node of an etcd cluster that sweeps
// expired records (Lead): it campaigns in the election prefix "e/sweeper"
// and runs the sweeper while it leads, hands over at once when it stops,
// and stops within a bound without a quorum. On bbolt there is one node
// and no election: the daemon starts the sweeper itself.
package sweeper
