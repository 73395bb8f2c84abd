// Package act is the core every administrative operation opens with: the
// audited act (Act) from its role check to its audit entry and log line,
// and dual control's hold.
//
// A method of the admin service begins its act (Core.Begin, which checks
// the role through Core.Allow and audits a refusal; Core.Read for a
// read), asks Core.Hold whether the act waits for a second operator, and
// defers Act.End, which appends the entry not yet committed and writes the
// log line. A change appends its entry in its own write transaction
// (Act.Update); a read appends admin_read before it reads (Act.Grant). The
// rules are in act.go; admin's doc.go and DESIGN-NOTES.md ("The
// administration audit") say why.
//
// Core carries what every act needs (the store, the clock, the log, the
// operations under dual control); admin.Local builds one from its fields,
// and the struct of every subject (admin/users, admin/clients,
// admin/hsmkeys, admin/pending, admin/audit) embeds it.
package act
