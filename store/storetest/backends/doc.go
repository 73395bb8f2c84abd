// Package backends opens a fresh store of every backend the product ships
// (store/bolt on a file, store/memory), so that a service's tests can show
// that it works on each of them through the store.Store seam. Bolt and
// Memory open one fresh store of a backend, closed when the test ends: the
// fixture of every test that needs a real bbolt file in t.TempDir() or an
// in-memory store.
//
// It is a package of its own, not part of storetest, because the backends'
// own tests import storetest: storetest must not import them.
package backends
