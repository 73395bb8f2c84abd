// Package pending is dual control's second half: listing, approving and
// rejecting the pending requests act.Core.Hold stores. An approved request
// is performed through the one admin.Service, as its requester asked
// (pending.go says how). Each operation is one audited act (admin/act);
// admin.Local calls it through Pending.
package pending
