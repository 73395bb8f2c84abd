package storetest

import "github.com/signd/signd/store"

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
