// Package etcdtest runs a real etcd server inside a test process
// (go.etcd.io/etcd/server/v3/embed): one member on loopback ports, its data
// in a directory the caller owns (Start), or a cluster of several members
// whose members can be stopped, killed and restarted (StartCluster). The
// store/etcd conformance tests and the daemon's tests that run signd on etcd
// start them per test package.
package etcdtest
