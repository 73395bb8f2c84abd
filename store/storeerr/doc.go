// Package storeerr holds the sentinel errors of the store contract
// (store/doc.go). Package store re-exports every one of them under the
// same name (store.ErrInvalid is storeerr.ErrInvalid, the same value), and
// callers keep testing with errors.Is against package store's names.
//
// They live in this leaf package so that store's own subpackages that
// package store builds on (store/auditlog) can return them without
// importing store, as bbolt keeps its errors in go.etcd.io/bbolt/errors.
package storeerr
