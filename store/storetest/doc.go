// Package storetest is the conformance suite of store.Store: every backend
// (bbolt today, a distributed one later, any fake a test uses) must pass it.
//
// A backend's test calls [Run] with a function that opens a fresh, empty
// store per subtest (and registers its Close with t.Cleanup), and [RunClock]
// with one that also injects the suite's clock, for the tests that need
// exact times. The suite only uses the store.Store API, so what it checks is
// the contract documented in package store.
package storetest
