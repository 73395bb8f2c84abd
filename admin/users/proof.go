package users

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/signd/signd/admin/act"
	"github.com/signd/signd/admin/ops"
	"github.com/signd/signd/admin/principal"
	"github.com/signd/signd/store"
)

// Proof documents, released by the OpenID Connect provider as <ns>.proof.

// proofTypes are the content types of proof documents.
var proofTypes = []string{store.ProofJPEG, store.ProofPNG, store.ProofPDF}

// AddProof performs Service.AddProof: the declared content type must be one of
// proofTypes and match the content's first bytes (http.DetectContentType,
// the WHATWG sniffing algorithm); the store limits the size to 10 MiB.
func (l *Users) AddProof(ctx context.Context, by principal.Principal, req ops.AddProofRequest) (_ *ops.UserView, err error) {
	a, err := l.Begin(ctx, by, "AddProof", store.AuditUserProofAdded, "user:"+req.Username)
	if err != nil {
		return nil, err
	}
	defer a.End(ctx, &err)
	a.User = req.Username
	a.Set("proof_id", req.ID)
	a.Set("content_type", req.ContentType)
	a.Set("size", strconv.Itoa(len(req.Content)))
	if !slices.Contains(proofTypes, req.ContentType) {
		return nil, act.Errorf(ops.KindInvalid, "content type %q is not accepted (%s)", req.ContentType, strings.Join(proofTypes, ", "))
	}
	switch {
	case len(req.Content) == 0:
		return nil, act.Errorf(ops.KindInvalid, "proof %q is empty", req.ID)
	case len(req.Content) > store.MaxProofSize:
		return nil, act.Errorf(ops.KindInvalid, "proof %q is larger than %d bytes", req.ID, store.MaxProofSize)
	}
	if got, _, _ := strings.Cut(http.DetectContentType(req.Content), ";"); got != req.ContentType {
		return nil, act.Errorf(ops.KindInvalid, "proof %q: the file is %s, not %s", req.ID, got, req.ContentType)
	}
	var u *store.User
	err = a.Update(ctx, func(tx store.Tx) (err error) {
		p := store.Proof{ProofRef: store.ProofRef{ID: req.ID, ContentType: req.ContentType}, Content: req.Content}
		if err := tx.PutProof(req.Username, p); err != nil {
			return err
		}
		u, err = tx.User(req.Username)
		return err
	})
	if err != nil {
		return nil, l.Fail(fmt.Sprintf("user %q", req.Username), err)
	}
	return l.userView(u), nil
}
