package etcdtest

import "syscall"

// procAttr makes a member die with the test process (SIGKILL when its
// parent exits), so that a test that crashes leaves no etcd running.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
