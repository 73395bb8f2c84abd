// Package etcdtest runs a real etcd server inside a test process
// (go.etcd.io/etcd/server/v3/embed): one member on loopback ports, its data
// in a directory the caller owns. The store/etcd conformance tests and the
// daemon's tests that run signd on etcd start one per test package.
package etcdtest
