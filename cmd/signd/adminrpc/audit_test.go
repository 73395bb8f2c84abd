package adminrpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/sys/unix"

	"github.com/signd/signd/admin"
	"github.com/signd/signd/store"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/storetest/backends"
)

// serveAdmin serves svc on a Unix socket as the daemon does and returns a
// Remote dialled to it.
func serveAdmin(t *testing.T, svc admin.Service) *Remote {
	t.Helper()
	return serveAdminAs(t, svc, everyRole)
}

// serveAdminAs is serveAdmin naming peers with principal.
func serveAdminAs(t *testing.T, svc admin.Service, principal func(*unix.Ucred) admin.Principal) *Remote {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "admin.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	e := echo.New()
	if err := (&Handler{Service: svc, Principal: principal}).Mount(e.Group("")); err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: e, ConnContext: ConnContext}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	r, err := Dial(sock, TrustSelf(NoGroup))
	if err != nil || r == nil {
		t.Fatalf("Dial: %v, %v", r, err)
	}
	return r
}

// TestAuditLocalRemote: the audit operations give the same report and the
// same lines whether they run on the store or through the admin socket.
// Each appends its own admin_read entry (a verification after it
// verified, an export first): the remote verification counts the local
// one's, and the exports compared select the credential entries.
func TestAuditLocalRemote(t *testing.T) {
	db := backends.Bolt(t, bolt.Options{})
	t0 := time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	kinds := []store.AuditKind{store.AuditCredentialEnrolled, store.AuditCredentialEnabled, store.AuditCredentialDisabled}
	for i, kind := range kinds {
		err := db.Update(context.Background(), func(tx store.Tx) error {
			return tx.AppendAudit(&store.AuditEntry{Time: t0.Add(time.Duration(i) * time.Hour), Kind: kind,
				User: "alice", Credential: "c1", Outcome: store.AuditOK, Reason: "by an admin"})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	local := admin.New(admin.Config{Store: db})
	remote := serveAdmin(t, local)
	ctx := context.Background()
	want, err := local.AuditVerify(ctx, everyRole(self()))
	if err != nil || !want.OK || want.Entries != 3 || len(want.Head) != 64 {
		t.Fatalf("local verify: %+v, %v", want, err)
	}
	if got, err := remote.AuditVerify(ctx, everyRole(self())); err != nil || !got.OK || got.Entries != want.Entries+1 || got.Head == want.Head {
		t.Fatalf("remote verify: %+v, %v; local %+v (one entry less: the local verification's)", got, err, want)
	}
	credentialKinds := []string{string(kinds[0]), string(kinds[1]), string(kinds[2])}
	cases := []struct {
		name  string
		since time.Time
		lines int
	}{
		{"all", time.Time{}, 3},
		{"since_second", t0.Add(time.Hour), 2},
		{"since_later", t0.Add(24 * time.Hour), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := admin.AuditExportRequest{Since: tc.since, Kinds: credentialKinds}
			var lw, rw bytes.Buffer
			if err := local.AuditExport(ctx, everyRole(self()), req, &lw); err != nil {
				t.Fatal(err)
			}
			if err := remote.AuditExport(ctx, everyRole(self()), req, &rw); err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(lw.String(), "\n"); n != tc.lines {
				t.Fatalf("local export: %d lines, want %d:\n%s", n, tc.lines, lw.String())
			}
			if rw.String() != lw.String() {
				t.Fatalf("remote export differs:\n%s\nlocal:\n%s", rw.String(), lw.String())
			}
		})
	}
}

// brokenExport streams one line and then fails, as an export that meets a
// damaged entry does.
type brokenExport struct{ recordingService }

func (brokenExport) AuditExport(_ context.Context, _ admin.Principal, _ admin.AuditExportRequest, w io.Writer) error {
	_, _ = io.WriteString(w, `{"seq":1}`+"\n")
	return &store.AuditBrokenError{Seq: 2, Reason: "digest does not match its content"}
}

// TestAuditExportRemoteFailure: a stream that fails after it started ends
// with the error, which Remote returns after copying the lines before it.
func TestAuditExportRemoteFailure(t *testing.T) {
	remote := serveAdmin(t, &brokenExport{})
	var w bytes.Buffer
	err := remote.AuditExport(context.Background(), admin.Principal{}, admin.AuditExportRequest{}, &w)
	want := (&store.AuditBrokenError{Seq: 2, Reason: "digest does not match its content"}).Error()
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if w.String() != `{"seq":1}`+"\n" {
		t.Fatalf("lines before the failure: %q", w.String())
	}
	// A malformed request is refused before the stream starts.
	_, err = remote.post(context.Background(), "AuditExport", map[string]any{"since": 1})
	var ae *admin.Error
	if !errors.As(err, &ae) || ae.Kind != admin.KindInvalid {
		t.Fatalf("malformed export request: %v", err)
	}
}

// refusedExport refuses before it writes, as Local does a principal
// without the auditor role.
type refusedExport struct{ brokenExport }

func (refusedExport) AuditExport(context.Context, admin.Principal, admin.AuditExportRequest, io.Writer) error {
	return &admin.Error{Kind: admin.KindForbidden, Message: "AuditExport requires the role auditor; uid:1001 holds no role"}
}

// TestAuditExportRefusedBeforeStream: a stream refused before its first
// byte is answered with the refusal's status (403), not a 200 that ends
// in an error line.
func TestAuditExportRefusedBeforeStream(t *testing.T) {
	remote := serveAdmin(t, &refusedExport{})
	res, err := remote.post(context.Background(), "AuditExport", admin.AuditExportRequest{})
	var ae *admin.Error
	if res != nil || !errors.As(err, &ae) || ae.Kind != admin.KindForbidden || ae.Message != "AuditExport requires the role auditor; uid:1001 holds no role" {
		t.Fatalf("refused export: %v, %v", res, err)
	}
	var w bytes.Buffer
	if err := remote.AuditExport(context.Background(), admin.Principal{}, admin.AuditExportRequest{}, &w); !errors.As(err, &ae) || ae.Kind != admin.KindForbidden || w.Len() != 0 {
		t.Fatalf("Remote.AuditExport: %v, %q", err, w.String())
	}
}
