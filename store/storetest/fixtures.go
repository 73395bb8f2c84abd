package storetest

import (
	"fmt"
	"sync"
	"syscall"

	"github.com/signd/signd/store"
)

// UserEditor is what EditUser needs of a transaction: store.Tx has it, and
// so has every service's narrower Tx that reads and writes users.
type UserEditor interface {
	User(username string) (*store.User, error)
	PutUser(u *store.User) error
}

// EditUser changes the record of the user name by change and writes it
// back in tx, as an admin's command does: the service tests' way to lock,
// disable or otherwise alter a user between two requests.
func EditUser(tx UserEditor, name string, change func(u *store.User)) error {
	u, err := tx.User(name)
	if err != nil {
		return err
	}
	change(u)
	return tx.PutUser(u)
}

// ErrDiskFull and ErrDiskFailed are what a bbolt store answers when its
// disk is full (a commit) or failing (a read): store.ErrUnavailable
// wrapping ENOSPC or EIO. The service tests' failing stores answer them.
var (
	ErrDiskFull   = fmt.Errorf("%w: write to signd.db failed: %w", store.ErrUnavailable, syscall.ENOSPC)
	ErrDiskFailed = fmt.Errorf("%w: read from signd.db: %w", store.ErrUnavailable, syscall.EIO)
)

// ThenFail is fn followed by a failure with fail: in a transaction, fn
// runs as it would, then what it wrote is rolled back and the transaction
// fails with fail, as a commit that fails (ErrDiskFull) does. An error of
// fn is returned as it is.
func ThenFail[Tx any](fn func(tx Tx) error, fail error) func(tx Tx) error {
	return func(tx Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return fail
	}
}

// AtOnce runs fn(0) … fn(n-1) in n goroutines released together, as
// concurrent clients arrive, and returns when all have returned: the races
// of single use, lockout and rate limits, at the store or through a
// service.
func AtOnce(n int, fn func(i int)) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

// Meanwhile runs fn(i) over and over in n goroutines, i = 0 … n-1, until
// fn returns false or stop is called: the load a test keeps up while it
// changes something under it (a reload, a backup, a child process). stop
// returns once every goroutine has; calling it again does nothing.
func Meanwhile(n int, fn func(i int) bool) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if !fn(i) {
					return
				}
			}
		})
	}
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		wg.Wait()
	}
}
