package main

import (
	"github.com/signd/signd/admin"
	"github.com/signd/signd/oauth/browser"
	enrollpage "github.com/signd/signd/oauth/enroll"
)

// The enrollment page is one more page over the browser flow's form
// defences; admin.Local checks and uses the links.
var (
	_ enrollpage.Forms   = (*browser.Handler)(nil)
	_ enrollpage.Backend = (*admin.Local)(nil)
	_ mounter            = (*enrollpage.Handler)(nil)
)

// enrollPage builds the enrollment page (/oauth2/enroll/{token}): a user
// created with an enrollment link sets their password and signing PIN.
// Using a link needs the store, the hasher and the clock of admin.Local,
// no token and no operator.
func (s *services) enrollPage(flow *browser.Handler) *enrollpage.Handler {
	return &enrollpage.Handler{
		Backend: admin.New(admin.Config{Store: s.store, Hasher: s.hasher, Now: s.now, Logger: s.logger.With("service", "oauth")}),
		Forms:   flow,
		Logger:  s.logger.With("service", "oauth"),
		Now:     s.now,
		Pages:   s.pages,
		Issuer:  s.cfg.UI.ProductName,
	}
}
