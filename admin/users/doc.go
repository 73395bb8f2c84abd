// Package users is the administration of users: adding, listing,
// showing, disabling and removing them, their password and signing PIN and
// the locks on them, TOTP, the one-time enrollment link (whose token is
// admin/enrollment's) and proof documents. Each operation is one audited
// act (admin/act); admin.Local calls it through Users.
package users
