// Package textview is how the admin CLI writes what the admin service
// answers as text for a terminal (--json writes the views as they are):
// one function per view, and the cells the list commands' tables share
// (Dash, YesNo, Stamp, LockState).
package textview
