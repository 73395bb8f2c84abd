package main

import (
	"strings"

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
		Backend: &admin.Local{Store: s.store, Hasher: s.hasher, Now: s.now, Logger: s.logger.With("service", "oauth")},
		Forms:   flow,
		Logger:  s.logger.With("service", "oauth"),
		Now:     s.now,
		Pages:   s.pages,
		Issuer:  s.cfg.UI.ProductName,
	}
}

// logPath is the path the access log and the panic log print: the
// enrollment page's without its token (a bearer secret until it is used),
// any other as it is.
func logPath(path string) string {
	if i := strings.Index(path, admin.EnrollPath); i >= 0 && len(path) > i+len(admin.EnrollPath) {
		return path[:i+len(admin.EnrollPath)] + "[REDACTED]"
	}
	return path
}
