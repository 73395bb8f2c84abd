package ops

import "fmt"

// Holdable reports whether the operation named op can be put under dual
// control, and if not why: it must change something, must not decide
// pending requests itself, and neither its request (which is stored until
// approved and shown to the approver) nor its answer (which goes to the
// approver) may carry a secret.
func Holdable(op string) error {
	o, ok := Lookup(op)
	switch {
	case !ok:
		return fmt.Errorf("unknown operation %q", op)
	case o.Read:
		return fmt.Errorf("%s changes nothing", op)
	case op == "ApprovePending" || op == "RejectPending":
		return fmt.Errorf("%s decides pending requests", op)
	}
	if why := secretIn(op); why != "" {
		return fmt.Errorf("%s cannot wait for approval: %s", op, why)
	}
	return nil
}

// secretIn says what secret (or document) an operation's request or
// answer carries, "" for none.
func secretIn(op string) string {
	switch op {
	case "AddUser":
		return "its request carries the password and the PIN"
	case "SetPassword":
		return "its request carries the new password"
	case "SetPIN":
		return "its request carries the new PIN"
	case "AddClient":
		return "its request or its answer carries the client secret"
	case "EnrollTOTP":
		return "its answer carries the TOTP secret"
	case "IssueEnrollment":
		return "its answer carries the enrollment link"
	case "AddProof":
		return "its request carries an identity document (personal data, up to 10 MiB)"
	}
	return ""
}
