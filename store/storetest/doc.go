// Package storetest is the conformance suite of store.Store: every backend
// (store/bolt on a file, store/etcd on a cluster, store/memory in memory)
// must pass it.
//
// A backend's test calls [Run] with an [Opener], a function that opens a
// fresh, empty store per subtest on a clock it is given (and registers its
// Close with t.Cleanup), and [RunClock] with the same Opener, for the tests
// that need exact times. The suite only uses the store.Store API, so what it checks is
// the contract documented in package store: CRUD and validation of every
// record kind, the indexes (owner, by code, expiry, party), single use under
// concurrency, the audit chain, and the transactions themselves — a View
// never sees an Update that has not committed and reads the same values
// while one commits, a failed Update leaves every record and index as it
// was, records never alias the caller's values, every write is refused in
// View, and Close waits for running transactions.
//
// What the CSC service asks of a store beside it, every backend passes too
// (an Opener's store is [Full]): [RunBatch] (Batch, csc.Store) and
// [RunSecrets] (named random keys).
// [BenchConsume] measures a SAD consumption with its audit entry, so that
// backends can be compared. [EditUser] changes a user's record in a
// transaction, as the service tests do between two requests; [ThenFail]
// makes a transaction fail after its function ran, with [ErrDiskFull] as a
// full disk does; [AtOnce] releases a race's transactions or requests
// together; [Meanwhile] keeps a load running while a test changes
// something under it.
package storetest
