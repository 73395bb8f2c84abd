package admin

import "github.com/signd/signd/admin/ops"

// The operations — the Service, what each takes and answers, the roles
// that may perform it (Operations) and the operator-facing Error — are
// package admin/ops's; these names keep admin's callers as they were.
type (
	AddClientRequest             = ops.AddClientRequest
	AddClientResult              = ops.AddClientResult
	AddProofRequest              = ops.AddProofRequest
	AddUserRequest               = ops.AddUserRequest
	ApprovalResult               = ops.ApprovalResult
	AuditChainView               = ops.AuditChainView
	AuditExportRequest           = ops.AuditExportRequest
	AuditKeyView                 = ops.AuditKeyView
	AuditReport                  = ops.AuditReport
	AuditVerifyCheckpointRequest = ops.AuditVerifyCheckpointRequest
	CheckpointReport             = ops.CheckpointReport
	CheckpointView               = ops.CheckpointView
	ClientView                   = ops.ClientView
	CreateAuditKeyRequest        = ops.CreateAuditKeyRequest
	CreateCredentialRequest      = ops.CreateCredentialRequest
	CreateCredentialResult       = ops.CreateCredentialResult
	CreateOIDCKeyRequest         = ops.CreateOIDCKeyRequest
	CredentialView               = ops.CredentialView
	EnrollRequest                = ops.EnrollRequest
	EnrollTOTPRequest            = ops.EnrollTOTPRequest
	EnrollTSARequest             = ops.EnrollTSARequest
	EnrollTSAResult              = ops.EnrollTSAResult
	EnrollmentView               = ops.EnrollmentView
	Error                        = ops.Error
	HSMInfoView                  = ops.HSMInfoView
	HSMKeyView                   = ops.HSMKeyView
	ImportCertificateRequest     = ops.ImportCertificateRequest
	ImportTSACertificateRequest  = ops.ImportTSACertificateRequest
	Kind                         = ops.Kind
	NameRequest                  = ops.NameRequest
	OIDCKeyView                  = ops.OIDCKeyView
	Operation                    = ops.Operation
	PendingView                  = ops.PendingView
	RemoveCredentialResult       = ops.RemoveCredentialResult
	RemoveResult                 = ops.RemoveResult
	RevokedView                  = ops.RevokedView
	RotateOIDCKeysRequest        = ops.RotateOIDCKeysRequest
	RotateOIDCKeysResult         = ops.RotateOIDCKeysResult
	Service                      = ops.Service
	SetCredentialAuthRequest     = ops.SetCredentialAuthRequest
	SetSecretRequest             = ops.SetSecretRequest
	StatusRequest                = ops.StatusRequest
	Stream                       = ops.Stream
	TOTPEnrollment               = ops.TOTPEnrollment
	TSACertificateView           = ops.TSACertificateView
	UserView                     = ops.UserView
)

// The error kinds and limits of package admin/ops.
const (
	KindInvalid              = ops.KindInvalid
	KindNotFound             = ops.KindNotFound
	KindExists               = ops.KindExists
	KindConflict             = ops.KindConflict
	KindUnavailable          = ops.KindUnavailable
	KindForbidden            = ops.KindForbidden
	KindInternal             = ops.KindInternal
	KindPending              = ops.KindPending
	MaxCredentialDescription = ops.MaxCredentialDescription
)

// KindOf is ops.KindOf: the kind of err, KindInternal when err is not an
// *Error.
func KindOf(err error) Kind { return ops.KindOf(err) }

// Operations is ops.Operations: every operation with the roles it requires.
func Operations() []Operation { return ops.Operations() }

// Lookup is ops.Lookup: the operation named name.
func Lookup(name string) (Operation, bool) { return ops.Lookup(name) }

// Holdable is ops.Holdable: whether the operation named op can be put
// under dual control, and if not why.
func Holdable(op string) error { return ops.Holdable(op) }

// Broken is ops.Broken: where a report's log is broken ("entry N",
// "entry N of chain X", "chain X").
func Broken(chain string, seq uint64) string { return ops.Broken(chain, seq) }
