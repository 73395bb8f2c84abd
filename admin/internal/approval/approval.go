// Package approval is a second operator's approval of an act held under
// dual control (admin/pending), as package admin hands it to the
// Principal the act is performed as. It is internal to admin, so no
// transport can make one: only ApprovePending sets a Principal's approver.
package approval

// By is the approval of the operator whose audit Actor it names.
type By struct{ actor string }

// New is the approval of the operator actor.
func New(actor string) By { return By{actor: actor} }

// Actor names the approving operator, "" for the zero By (no approval).
func (b By) Actor() string { return b.actor }
