// Package storeopen opens the store the configuration names (Open): the
// bbolt file of store.path (the daemon's backend on one node, creating its
// directory), or the etcd cluster of store.etcd.* (several nodes), with
// its client TLS. Backend is what the daemon needs of either: the
// transactional store and the named secrets that outlive restarts.
package storeopen
