// Package etcdtest runs a real etcd server inside a test process
// (go.etcd.io/etcd/server/v3/embed): one member on loopback ports, its data
// in a directory the caller owns (Start), or a cluster of several members
// whose members can be stopped, killed and restarted (StartCluster). The
// store/etcd conformance tests and the daemon's tests that run signd on etcd
// start them per test package. StartProcessCluster runs the members as
// processes of their own instead (cmd/signd-cluster's etcd member, data
// fsynced), for tests where killing a member must be a real crash
// (SIGKILL); it finds the leader with etcd's maintenance Status API.
package etcdtest
