// Package bolttest reads and edits a closed store file with bbolt directly,
// under store/bolt: the tests of store/bolt's schema migrations, and the
// Debian package's upgrade test, make a file of an older schema version
// (or a damaged record) and read the version the file ends up with.
package bolttest
