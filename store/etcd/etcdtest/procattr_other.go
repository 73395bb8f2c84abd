//go:build !linux

package etcdtest

import "syscall"

// procAttr: no parent-death signal outside Linux; Close stops the members.
func procAttr() *syscall.SysProcAttr { return nil }
