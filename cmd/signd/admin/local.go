package admin

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/signd/signd/csc/enroll"
	"github.com/signd/signd/hsm"
	"github.com/signd/signd/oidc"
	"github.com/signd/signd/store"
)

// KeyStore is what Local needs of the token; *hsm.Token satisfies it.
type KeyStore interface {
	GenerateRSA(ctx context.Context, label string, bits int) (*hsm.KeyInfo, error)
	Key(ctx context.Context, id []byte) (*hsm.Key, error)
	DestroyKey(ctx context.Context, id []byte) error
	ImportCertificate(ctx context.Context, id []byte, label string, cert *x509.Certificate) error
}

// Local performs the operations directly on a store and a token.
type Local struct {
	Store  store.Store
	Keys   KeyStore // nil: credential operations answer KindUnavailable
	Hasher *store.Hasher
	Now    func() time.Time // nil = time.Now
	Logger *slog.Logger     // nil = discard
	// OIDCKeys manages the OIDC signing keys (see oidc.go); nil: the
	// OIDC key operations answer KindUnavailable.
	OIDCKeys *oidc.KeyRing
}

var _ Service = (*Local)(nil)

// Input limits. Passwords and PINs are counted in bytes.
const (
	minPasswordLen = 8
	maxPasswordLen = 1024
	minPINLen      = 4
	maxPINLen      = 64
	maxNameLen     = 200
	maxClaimLen    = 256
)

func (l *Local) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Local) logger() *slog.Logger {
	if l.Logger != nil {
		return l.Logger
	}
	return slog.New(slog.DiscardHandler)
}

// fail turns store and hsm errors into operator errors. Unknown errors are
// logged and become KindInternal without detail.
func (l *Local) fail(op string, err error) error {
	var ae *Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return ae
	case errors.Is(err, store.ErrInvalid):
		return errorf(KindInvalid, "%s", strings.TrimPrefix(err.Error(), "store: "))
	case errors.Is(err, store.ErrNotFound):
		return errorf(KindNotFound, "%s: not found", op)
	case errors.Is(err, store.ErrAlreadyExists):
		return errorf(KindExists, "%s: already exists", op)
	case errors.Is(err, hsm.ErrTokenUnavailable), errors.Is(err, hsm.ErrBusy):
		return errorf(KindUnavailable, "%s: the HSM is unavailable, try again: %v", op, err)
	case errors.Is(err, hsm.ErrLabelExists):
		return errorf(KindExists, "%s: %v", op, err)
	case errors.Is(err, store.ErrUnavailable):
		return errorf(KindUnavailable, "%s: the store cannot write now (disk full or failing?), try again: %v", op, err)
	case errors.Is(err, store.ErrCorrupt):
		return errorf(KindInternal, "%s: %v", op, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return errorf(KindUnavailable, "%s: %v", op, err)
	}
	l.logger().Error("admin operation failed", "op", op, "err", err)
	return errorf(KindInternal, "%s: internal error (see the signd log)", op)
}

// ---- users ----

var claimKeys = []string{
	"given_name", "last_name", "birthdate", "birthplace", "nationality",
	"document_type", "id_number",
	"nl_brp_voornaam", "nl_brp_voorvoegsel", "nl_brp_geslachtsnaam",
	"nl_brp_geslachtsnaam_zonder_voorvoegsel",
	"id_document_issuance_date", "id_document_issuance_place",
}

// ClaimKeys lists the identity attribute names `signd user add --claims`
// accepts.
func ClaimKeys() []string { return slices.Clone(claimKeys) }

var dateRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

func validateClaims(claims map[string]string) error {
	for k, v := range claims {
		if !slices.Contains(claimKeys, k) {
			return errorf(KindInvalid, "claims: unknown key %q (allowed: %s)", k, strings.Join(claimKeys, ", "))
		}
		if v == "" || len(v) > maxClaimLen || !printable(v) {
			return errorf(KindInvalid, "claims: %s must be 1-%d printable characters", k, maxClaimLen)
		}
		if k == "birthdate" || k == "id_document_issuance_date" {
			if _, err := time.Parse(time.DateOnly, v); err != nil || !dateRE.MatchString(v) {
				return errorf(KindInvalid, "claims: %s must be a date YYYY-MM-DD", k)
			}
		}
	}
	return nil
}

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return false
		}
	}
	return true
}

func validateEmail(e string) error {
	if e == "" {
		return nil
	}
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || a.Name != "" {
		return errorf(KindInvalid, "email: %q is not a plain email address", e)
	}
	return nil
}

func checkSecretLen(what, s string, lo, hi int) error {
	if len(s) < lo || len(s) > hi {
		return errorf(KindInvalid, "%s must be %d to %d bytes long", what, lo, hi)
	}
	if !printable(s) {
		return errorf(KindInvalid, "%s contains control characters", what)
	}
	return nil
}

func userView(u *store.User) *UserView {
	v := &UserView{
		Username: u.Username, ID: u.ID, Status: string(u.Status),
		Email: u.Email, EmailVerified: u.EmailVerified,
		HasPIN: u.PINHash != "", HasTOTP: u.TOTPSecret != "",
		PasswordLocked: u.PasswordLocked, FailedPasswords: u.FailedPasswords,
		PINLocked: u.PINLocked, FailedPINs: u.FailedPINs,
		Claims: u.Claims, CreatedAt: u.CreatedAt, UpdatedAt: u.UpdatedAt,
	}
	for _, p := range u.Proofs {
		v.Proofs = append(v.Proofs, p.ID)
	}
	return v
}

// AddUser implements Service.
func (l *Local) AddUser(ctx context.Context, req AddUserRequest) (*UserView, error) {
	if err := checkSecretLen("password", req.Password, minPasswordLen, maxPasswordLen); err != nil {
		return nil, err
	}
	if req.PIN != "" {
		if err := checkSecretLen("PIN", req.PIN, minPINLen, maxPINLen); err != nil {
			return nil, err
		}
	}
	if err := validateEmail(req.Email); err != nil {
		return nil, err
	}
	if req.EmailVerified && req.Email == "" {
		return nil, errorf(KindInvalid, "--email-verified needs --email")
	}
	if err := validateClaims(req.Claims); err != nil {
		return nil, err
	}
	id, err := store.NewID()
	if err != nil {
		return nil, l.fail("user "+req.Username, err)
	}
	u := &store.User{
		ID: id, Username: req.Username, Status: store.UserActive,
		Email: req.Email, EmailVerified: req.EmailVerified, Claims: req.Claims,
	}
	if u.PasswordHash, err = l.Hasher.Hash([]byte(req.Password)); err != nil {
		return nil, l.fail("user "+req.Username, err)
	}
	if req.PIN != "" {
		if u.PINHash, err = l.Hasher.Hash([]byte(req.PIN)); err != nil {
			return nil, l.fail("user "+req.Username, err)
		}
	}
	err = l.Store.Update(ctx, func(tx store.Tx) error {
		if err := tx.CreateUser(u); err != nil {
			return err
		}
		u, err = tx.User(req.Username)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("user %q", req.Username), err)
	}
	return userView(u), nil
}

// ListUsers implements Service.
func (l *Local) ListUsers(ctx context.Context) ([]UserView, error) {
	var users []store.User
	err := l.Store.View(ctx, func(tx store.Tx) (err error) {
		users, err = tx.Users()
		return err
	})
	if err != nil {
		return nil, l.fail("list users", err)
	}
	out := make([]UserView, 0, len(users))
	for i := range users {
		out = append(out, *userView(&users[i]))
	}
	return out, nil
}

// ShowUser implements Service.
func (l *Local) ShowUser(ctx context.Context, username string) (*UserView, error) {
	var u *store.User
	err := l.Store.View(ctx, func(tx store.Tx) (err error) {
		u, err = tx.User(username)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("user %q", username), err)
	}
	return userView(u), nil
}

// revoker revokes what hangs on a user, in the transaction of the action
// that calls for it: store.Tx.RevokeUser or store.Tx.RevokeUserSigning.
type revoker func(tx store.Tx, username string) (store.Revoked, error)

// updateUser runs fn on the user inside one write transaction, and revoke
// (when not nil) in the same one; op names the action in the log.
func (l *Local) updateUser(ctx context.Context, op, username string, revoke revoker, fn func(u *store.User) error) (*UserView, error) {
	var u *store.User
	var r store.Revoked
	err := l.Store.Update(ctx, func(tx store.Tx) (err error) {
		if u, err = tx.User(username); err != nil {
			return err
		}
		if err := fn(u); err != nil {
			return err
		}
		if err := tx.PutUser(u); err != nil {
			return err
		}
		if revoke != nil {
			if r, err = revoke(tx, username); err != nil {
				return err
			}
		}
		u, err = tx.User(username)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("user %q", username), err)
	}
	v := userView(u)
	if revoke != nil {
		v.Revoked = revokedView(r)
		l.logger().Info("user "+op, "username", username, "revoked", v.Revoked)
	}
	return v, nil
}

// SetUserStatus implements Service. Disabling revokes everything of the
// user.
func (l *Local) SetUserStatus(ctx context.Context, username string, enabled bool) (*UserView, error) {
	if enabled {
		return l.updateUser(ctx, "enabled", username, nil, func(u *store.User) error {
			u.Status = store.UserActive
			return nil
		})
	}
	return l.updateUser(ctx, "disabled", username, store.Tx.RevokeUser, func(u *store.User) error {
		u.Status = store.UserDisabled
		return nil
	})
}

// UnlockUser implements Service: it clears both lockouts and both counters.
func (l *Local) UnlockUser(ctx context.Context, username string) (*UserView, error) {
	return l.updateUser(ctx, "unlocked", username, nil, func(u *store.User) error {
		u.PasswordLocked, u.FailedPasswords = false, 0
		u.PINLocked, u.FailedPINs = false, 0
		return nil
	})
}

// SetPassword implements Service; it also clears the password lockout and
// revokes everything of the user (whoever knew the old password is out).
func (l *Local) SetPassword(ctx context.Context, req SetSecretRequest) (*UserView, error) {
	if err := checkSecretLen("password", req.Secret, minPasswordLen, maxPasswordLen); err != nil {
		return nil, err
	}
	h, err := l.Hasher.Hash([]byte(req.Secret))
	if err != nil {
		return nil, l.fail("set password", err)
	}
	return l.updateUser(ctx, "password set", req.Username, store.Tx.RevokeUser, func(u *store.User) error {
		u.PasswordHash, u.PasswordLocked, u.FailedPasswords = h, false, 0
		return nil
	})
}

// SetPIN implements Service; it also clears the PIN lockout and revokes
// what the old PIN approved or is about to approve: the user's SADs and
// credential-bound codes and pending requests.
func (l *Local) SetPIN(ctx context.Context, req SetSecretRequest) (*UserView, error) {
	if err := checkSecretLen("PIN", req.Secret, minPINLen, maxPINLen); err != nil {
		return nil, err
	}
	h, err := l.Hasher.Hash([]byte(req.Secret))
	if err != nil {
		return nil, l.fail("set PIN", err)
	}
	return l.updateUser(ctx, "PIN set", req.Username, store.Tx.RevokeUserSigning, func(u *store.User) error {
		u.PINHash, u.PINLocked, u.FailedPINs = h, false, 0
		return nil
	})
}

// ---- clients ----

// knownScopes are the scopes a client may be registered for. The OIDC
// namespaced scopes are checked by suffix, the namespace being configurable.
var knownScopes = []string{"service", "credential", "openid", "email"}

var knownScopeSuffixes = []string{".personal_info", ".id_number", ".proof"}

func validScope(s string) bool {
	if slices.Contains(knownScopes, s) {
		return true
	}
	for _, suf := range knownScopeSuffixes {
		if strings.HasSuffix(s, suf) && len(s) > len(suf) && printable(s) && !strings.ContainsAny(s, " \"\\") {
			return true
		}
	}
	return false
}

func clientView(c *store.Client) *ClientView {
	return &ClientView{
		ID: c.ID, Name: c.Name, RedirectURIs: c.RedirectURIs, Scopes: c.Scopes,
		SectorIdentifier: c.SectorIdentifier, RequirePKCE: c.RequirePKCE,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
}

// NewClientSecret returns 256 random bits, base64url without padding.
func NewClientSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// AddClient implements Service.
func (l *Local) AddClient(ctx context.Context, req AddClientRequest) (*AddClientResult, error) {
	res := &AddClientResult{}
	secret := req.Secret
	if secret == "" {
		var err error
		if secret, err = NewClientSecret(); err != nil {
			return nil, l.fail("client", err)
		}
		res.GeneratedSecret = secret
	} else if len(secret) < 32 || len(secret) > 512 || !printable(secret) {
		// Client secrets are hashed with plain SHA-256, which is only safe
		// for high-entropy secrets: refuse short ones.
		return nil, errorf(KindInvalid, "client secret must be 32 to 512 printable bytes (leave --secret-file out to generate one)")
	}
	if len(req.Name) > maxNameLen || !printable(req.Name) {
		return nil, errorf(KindInvalid, "client name must be at most %d printable characters", maxNameLen)
	}
	scopes := req.Scopes
	if len(scopes) == 0 {
		scopes = []string{"service", "credential"}
	}
	for _, s := range scopes {
		if !validScope(s) {
			return nil, errorf(KindInvalid, "scope %q is not one signd serves (service, credential, openid, email, <ns>.personal_info, <ns>.id_number, <ns>.proof)", s)
		}
	}
	if dup := firstDuplicate(req.RedirectURIs); dup != "" {
		return nil, errorf(KindInvalid, "redirect URI %q given twice", dup)
	}
	name := req.Name
	if name == "" {
		name = req.ID
	}
	c := &store.Client{
		ID: req.ID, Name: name, SecretHash: store.HashSecret(secret),
		RedirectURIs: req.RedirectURIs, Scopes: slices.Compact(slices.Sorted(slices.Values(scopes))),
		SectorIdentifier: req.SectorIdentifier, RequirePKCE: req.RequirePKCE,
	}
	if err := checkSector(c); err != nil {
		return nil, err
	}
	err := l.Store.Update(ctx, func(tx store.Tx) (err error) {
		if err := tx.CreateClient(c); err != nil {
			return err
		}
		c, err = tx.Client(req.ID)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("client %q", req.ID), err)
	}
	res.Client = *clientView(c)
	return res, nil
}

func firstDuplicate(xs []string) string {
	seen := map[string]bool{}
	for _, x := range xs {
		if seen[x] {
			return x
		}
		seen[x] = true
	}
	return ""
}

// ListClients implements Service.
func (l *Local) ListClients(ctx context.Context) ([]ClientView, error) {
	var cs []store.Client
	err := l.Store.View(ctx, func(tx store.Tx) (err error) {
		cs, err = tx.Clients()
		return err
	})
	if err != nil {
		return nil, l.fail("list clients", err)
	}
	out := make([]ClientView, 0, len(cs))
	for i := range cs {
		out = append(out, *clientView(&cs[i]))
	}
	return out, nil
}

// ShowClient implements Service.
func (l *Local) ShowClient(ctx context.Context, id string) (*ClientView, error) {
	var c *store.Client
	err := l.Store.View(ctx, func(tx store.Tx) (err error) {
		c, err = tx.Client(id)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("client %q", id), err)
	}
	return clientView(c), nil
}

// RemoveClient implements Service: it deletes the client and revokes its
// access tokens, SADs, codes and pending requests in one transaction.
func (l *Local) RemoveClient(ctx context.Context, id string) (*RemoveResult, error) {
	var r store.Revoked
	err := l.Store.Update(ctx, func(tx store.Tx) (err error) {
		if err := tx.DeleteClient(id); err != nil {
			return err
		}
		r, err = tx.RevokeClient(id)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("client %q", id), err)
	}
	res := &RemoveResult{Removed: id, Revoked: *revokedView(r)}
	l.logger().Info("client removed", "client_id", id, "revoked", &res.Revoked)
	return res, nil
}

// ---- credentials ----

func credentialView(c *store.Credential) *CredentialView {
	v := &CredentialView{
		ID: c.ID, Owner: c.Owner, Label: c.Label, Algorithm: c.Algorithm,
		KeyBits: c.KeyBits, KeyID: hex.EncodeToString(c.KeyID), Status: string(c.Status),
		ChainLength: len(c.Chain), CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt,
	}
	if len(c.Chain) > 0 {
		if leaf, err := x509.ParseCertificate(c.Chain[0]); err == nil {
			v.Subject = leaf.Subject.String()
			v.Issuer = leaf.Issuer.String()
			v.Serial = hex.EncodeToString(leaf.SerialNumber.Bytes())
			nb, na := leaf.NotBefore.UTC(), leaf.NotAfter.UTC()
			v.NotBefore, v.NotAfter = &nb, &na
		}
	}
	return v
}

// enrollKeys gives enrollment the token's keys.
type enrollKeys struct{ keys KeyStore }

func (k enrollKeys) GenerateKey(ctx context.Context, label string, bits int) ([]byte, int, error) {
	info, err := k.keys.GenerateRSA(ctx, label, bits)
	if err != nil {
		return nil, 0, err
	}
	return info.ID, info.Bits, nil
}

func (k enrollKeys) Signer(ctx context.Context, id []byte) (crypto.Signer, error) {
	key, err := k.keys.Key(ctx, id)
	if err != nil {
		return nil, err
	}
	return key, nil
}

func (l *Local) keys() (KeyStore, error) {
	if l.Keys == nil {
		return nil, errorf(KindUnavailable, "the HSM is not open in this process")
	}
	return l.Keys, nil
}

// CreateCredential implements Service: the key pair is generated in the
// token, a CSR is signed by it, and the credential is stored as pending
// (unusable) until ImportCertificate attaches a chain.
func (l *Local) CreateCredential(ctx context.Context, req CreateCredentialRequest) (*CreateCredentialResult, error) {
	spec, err := enroll.Request{Owner: req.User, Algorithm: req.Algo, Subject: req.Subject}.Check()
	if err != nil {
		return nil, errorf(KindInvalid, "%v", err)
	}
	// Check the owner first, so a typo costs no key generation.
	if _, err := l.ShowUser(ctx, req.User); err != nil {
		return nil, err
	}
	keys, err := l.keys()
	if err != nil {
		return nil, err
	}
	id, err := store.NewID()
	if err != nil {
		return nil, l.fail("credential", err)
	}
	label := req.Label
	if label == "" {
		label = "signd-" + id
	}
	if len(label) > 128 || !printable(label) {
		return nil, errorf(KindInvalid, "label must be 1 to 128 printable characters")
	}
	key, csrDER, err := enroll.Generate(ctx, enrollKeys{keys}, label, spec)
	if key == nil {
		return nil, l.fail("generate key", err)
	}
	rollback := func(cause error) error {
		if derr := keys.DestroyKey(context.WithoutCancel(ctx), key.ID); derr != nil {
			l.logger().Error("rollback: destroying key failed", "key_id", hex.EncodeToString(key.ID), "err", derr)
			return errorf(KindInternal, "credential creation failed (%v) and key %x with label %q is left in the token: remove it with pkcs11-tool", l.fail("create credential", cause), key.ID, label)
		}
		return l.fail("create credential", cause)
	}
	if err != nil {
		return nil, rollback(err)
	}
	c := &store.Credential{
		ID: id, Owner: req.User, KeyID: key.ID, Label: label, Algorithm: spec.Algorithm,
		KeyBits: key.Bits, Status: store.CredentialPending,
	}
	err = l.Store.Update(ctx, func(tx store.Tx) (err error) {
		if err := tx.CreateCredential(c); err != nil {
			return err
		}
		if err := tx.AppendAudit(&store.AuditEntry{Time: l.now(), Kind: store.AuditCredentialEnrolled,
			User: req.User, Credential: id, Outcome: string(store.CredentialPending),
			Reason: fmt.Sprintf("key pair %s generated in the token (label %q), CSR issued", spec.Algorithm, label)}); err != nil {
			return err
		}
		c, err = tx.Credential(id)
		return err
	})
	if err != nil {
		return nil, rollback(err)
	}
	l.logger().Info("credential created", "credential_id", id, "owner", req.User, "algorithm", spec.Algorithm)
	return &CreateCredentialResult{
		Credential: *credentialView(c),
		CSRPEM:     enroll.CSRPEM(csrDER),
	}, nil
}

// ImportCertificate implements Service.
func (l *Local) ImportCertificate(ctx context.Context, req ImportCertificateRequest) (*CredentialView, error) {
	chain, err := enroll.ParseChainPEM([]byte(req.ChainPEM))
	if err != nil {
		return nil, errorf(KindInvalid, "chain: %v", err)
	}
	cred, err := l.getCredential(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if cred.Status == store.CredentialDisabled {
		return nil, errorf(KindConflict, "credential %q is disabled; enable it before importing a certificate", req.ID)
	}
	keys, err := l.keys()
	if err != nil {
		return nil, err
	}
	key, err := keys.Key(ctx, cred.KeyID)
	if err != nil {
		return nil, l.fail("credential key", err)
	}
	switch err := enroll.CheckChain(chain, key.Public(), l.now()); {
	case errors.Is(err, enroll.ErrLeafKey):
		return nil, errorf(KindInvalid, "the leaf certificate's public key is not the key of credential %q", req.ID)
	case err != nil:
		return nil, errorf(KindInvalid, "%v", err)
	}
	if err := keys.ImportCertificate(ctx, cred.KeyID, cred.Label, chain[0]); err != nil {
		return nil, l.fail("import certificate", err)
	}
	ders := make([][]byte, len(chain))
	for i, c := range chain {
		ders[i] = c.Raw
	}
	var out *store.Credential
	err = l.Store.Update(ctx, func(tx store.Tx) (err error) {
		c, err := tx.Credential(req.ID)
		if err != nil {
			return err
		}
		c.Chain = ders
		c.Status = store.CredentialEnabled
		if err := tx.PutCredential(c); err != nil {
			return err
		}
		if err := tx.AppendAudit(&store.AuditEntry{Time: l.now(), Kind: store.AuditCredentialEnrolled,
			User: c.Owner, Credential: c.ID, Outcome: string(store.CredentialEnabled),
			Reason: "certificate chain imported: " + chain[0].Subject.String()}); err != nil {
			return err
		}
		out, err = tx.Credential(req.ID)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("credential %q", req.ID), err)
	}
	l.logger().Info("certificate imported", "credential_id", req.ID, "subject", chain[0].Subject.String())
	return credentialView(out), nil
}

func (l *Local) getCredential(ctx context.Context, id string) (*store.Credential, error) {
	var c *store.Credential
	err := l.Store.View(ctx, func(tx store.Tx) (err error) {
		c, err = tx.Credential(id)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("credential %q", id), err)
	}
	return c, nil
}

// ListCredentials implements Service. owner "" lists every credential.
func (l *Local) ListCredentials(ctx context.Context, owner string) ([]CredentialView, error) {
	var cs []store.Credential
	err := l.Store.View(ctx, func(tx store.Tx) (err error) {
		if owner != "" {
			if _, err := tx.User(owner); err != nil {
				return err
			}
		}
		cs, err = tx.Credentials(owner, "", 0)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("user %q", owner), err)
	}
	out := make([]CredentialView, 0, len(cs))
	for i := range cs {
		out = append(out, *credentialView(&cs[i]))
	}
	return out, nil
}

// ShowCredential implements Service.
func (l *Local) ShowCredential(ctx context.Context, id string) (*CredentialView, error) {
	c, err := l.getCredential(ctx, id)
	if err != nil {
		return nil, err
	}
	return credentialView(c), nil
}

// SetCredentialStatus implements Service. A pending credential (no
// certificate yet) cannot be enabled. Disabling revokes the SADs, codes and
// pending requests bound to the credential.
func (l *Local) SetCredentialStatus(ctx context.Context, id string, enabled bool) (*CredentialView, error) {
	var out *store.Credential
	var revoked *RevokedView
	err := l.Store.Update(ctx, func(tx store.Tx) (err error) {
		c, err := tx.Credential(id)
		if err != nil {
			return err
		}
		switch {
		case enabled && len(c.Chain) == 0:
			return errorf(KindConflict, "credential %q has no certificate yet: import one with `signd credential import-cert %s --chain FILE.pem`", id, id)
		case enabled:
			c.Status = store.CredentialEnabled
		default:
			c.Status = store.CredentialDisabled
		}
		if err := tx.PutCredential(c); err != nil {
			return err
		}
		kind, reason := store.AuditCredentialEnabled, "by an admin"
		if !enabled {
			r, err := tx.RevokeCredential(id)
			if err != nil {
				return err
			}
			revoked = revokedView(r)
			kind, reason = store.AuditCredentialDisabled, "by an admin; revoked "+revoked.String()
		}
		if err := tx.AppendAudit(&store.AuditEntry{Time: l.now(), Kind: kind, User: c.Owner,
			Credential: c.ID, Outcome: store.AuditOK, Reason: reason}); err != nil {
			return err
		}
		out, err = tx.Credential(id)
		return err
	})
	if err != nil {
		return nil, l.fail(fmt.Sprintf("credential %q", id), err)
	}
	v := credentialView(out)
	v.Revoked = revoked
	if revoked != nil {
		l.logger().Info("credential status changed", "credential_id", id, "status", out.Status, "revoked", revoked)
	} else {
		l.logger().Info("credential status changed", "credential_id", id, "status", out.Status)
	}
	return v, nil
}
