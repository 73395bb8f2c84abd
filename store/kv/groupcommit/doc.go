// Package groupcommit is the queue behind the key-value backends' Batch
// (store.Batcher): Batcher has no timer, the first caller commits at
// once, the calls that queue meanwhile share the next commit. How one
// commit runs its functions is the backend's: bbolt (store/bolt) runs them
// in one Update and, if one fails, each again alone; etcd (store/etcd)
// runs each after a savepoint of its overlay and rolls a failing one back
// alone.
//
// It imports store (for store.Tx) and no other signd package.
package groupcommit
