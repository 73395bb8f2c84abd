package caps

import (
	"crypto/elliptic"
	"fmt"
	"log/slog"
	"strings"

	"github.com/miekg/pkcs11"
	"github.com/signd/signd/hsm/ckr"
	"github.com/signd/signd/hsm/cryptoki"
)

// Capabilities is what a token says about itself when it is opened
// (C_GetInfo, C_GetTokenInfo, C_GetMechanismList, C_GetMechanismInfo),
// reduced to what signd needs. Templates and refusals are built from it:
// a key type the token cannot make or sign with is refused by name before
// the token is asked (ckr.ErrUnsupportedAlgorithm).
type Capabilities struct {
	Module string `json:"module"` // resolved path of the PKCS#11 module

	// From C_GetInfo: the module.
	CryptokiVersion    string `json:"cryptoki_version"` // "2.40", "2.20"
	LibraryVendor      string `json:"library_manufacturer"`
	LibraryDescription string `json:"library_description"`
	LibraryVersion     string `json:"library_version"`

	// From C_GetTokenInfo: the token.
	Label           string   `json:"token_label"`
	Manufacturer    string   `json:"manufacturer"`
	Model           string   `json:"model"`
	Serial          string   `json:"serial"`
	HardwareVersion string   `json:"hardware_version"`
	FirmwareVersion string   `json:"firmware_version"`
	Flags           []string `json:"flags"` // CKF_ names of the token flags signd cares about
	MinPINLen       uint     `json:"min_pin_len"`
	MaxPINLen       uint     `json:"max_pin_len"`
	// MaxSessions and MaxRWSessions are the token's limits; 0 means none
	// (CK_EFFECTIVELY_INFINITE) or not known (CK_UNAVAILABLE_INFORMATION).
	MaxSessions   uint `json:"max_sessions"`
	MaxRWSessions uint `json:"max_rw_sessions"`

	// Mechanisms are the mechanisms signd uses, in a fixed order, each
	// with what the token said of it (Present false: not in its list).
	Mechanisms []Mechanism `json:"mechanisms"`

	// Profile is the configured key-template profile: "auto", "strict"
	// or "token-fixed-usage" (see package hsm, Config.Profile).
	Profile string `json:"profile"`

	major, minor byte // Cryptoki version
}

// Mechanism is one mechanism signd uses, as the token describes it.
type Mechanism struct {
	Name    string `json:"name"` // "CKM_RSA_PKCS_KEY_PAIR_GEN"
	Present bool   `json:"present"`
	// MinKeySize and MaxKeySize are CK_MECHANISM_INFO's key sizes: bits
	// for RSA and EC mechanisms.
	MinKeySize      uint `json:"min_key_size,omitempty"`
	MaxKeySize      uint `json:"max_key_size,omitempty"`
	Sign            bool `json:"sign,omitempty"`              // CKF_SIGN
	GenerateKeyPair bool `json:"generate_key_pair,omitempty"` // CKF_GENERATE_KEY_PAIR

	typ uint
}

// signdMechanisms are the mechanisms signd calls, in the order reports
// list them.
var signdMechanisms = []struct {
	typ  uint
	name string
}{
	{pkcs11.CKM_RSA_PKCS_KEY_PAIR_GEN, "CKM_RSA_PKCS_KEY_PAIR_GEN"},
	{pkcs11.CKM_RSA_PKCS, "CKM_RSA_PKCS"},
	{pkcs11.CKM_RSA_PKCS_PSS, "CKM_RSA_PKCS_PSS"},
	{pkcs11.CKM_EC_KEY_PAIR_GEN, "CKM_EC_KEY_PAIR_GEN"},
	{pkcs11.CKM_ECDSA, "CKM_ECDSA"},
}

// tokenFlags are the token flags Capabilities names.
var tokenFlags = []struct {
	flag uint
	name string
}{
	{pkcs11.CKF_RNG, "CKF_RNG"},
	{pkcs11.CKF_WRITE_PROTECTED, "CKF_WRITE_PROTECTED"},
	{pkcs11.CKF_LOGIN_REQUIRED, "CKF_LOGIN_REQUIRED"},
	{pkcs11.CKF_USER_PIN_INITIALIZED, "CKF_USER_PIN_INITIALIZED"},
	{pkcs11.CKF_PROTECTED_AUTHENTICATION_PATH, "CKF_PROTECTED_AUTHENTICATION_PATH"},
	{pkcs11.CKF_TOKEN_INITIALIZED, "CKF_TOKEN_INITIALIZED"},
	{pkcs11.CKF_USER_PIN_COUNT_LOW, "CKF_USER_PIN_COUNT_LOW"},
	{pkcs11.CKF_USER_PIN_FINAL_TRY, "CKF_USER_PIN_FINAL_TRY"},
	{pkcs11.CKF_USER_PIN_LOCKED, "CKF_USER_PIN_LOCKED"},
	{pkcs11.CKF_USER_PIN_TO_BE_CHANGED, "CKF_USER_PIN_TO_BE_CHANGED"},
}

// Probe asks the module and the token in slot what they can do. Only
// C_GetTokenInfo must answer: a module without C_GetInfo or a mechanism
// list (CKR_FUNCTION_NOT_SUPPORTED) leaves those parts empty, and every
// mechanism then counts as present (signd finds out when it calls it).
func Probe(lib cryptoki.Ctx, path string, slot uint) (*Capabilities, error) {
	ti, err := lib.GetTokenInfo(slot)
	if err != nil {
		return nil, ckr.Wrap("C_GetTokenInfo", err)
	}
	c := &Capabilities{
		Module:          path,
		Label:           ti.Label,
		Manufacturer:    trimField(ti.ManufacturerID),
		Model:           trimField(ti.Model),
		Serial:          trimField(ti.SerialNumber),
		HardwareVersion: version(ti.HardwareVersion),
		FirmwareVersion: version(ti.FirmwareVersion),
		MinPINLen:       ti.MinPinLen,
		MaxPINLen:       ti.MaxPinLen,
		MaxSessions:     limit(ti.MaxSessionCount),
		MaxRWSessions:   limit(ti.MaxRwSessionCount),
	}
	for _, f := range tokenFlags {
		if ti.Flags&f.flag != 0 {
			c.Flags = append(c.Flags, f.name)
		}
	}
	if info, err := lib.GetInfo(); err == nil {
		c.major, c.minor = info.CryptokiVersion.Major, info.CryptokiVersion.Minor
		c.CryptokiVersion = version(info.CryptokiVersion)
		c.LibraryVendor = trimField(info.ManufacturerID)
		c.LibraryDescription = trimField(info.LibraryDescription)
		c.LibraryVersion = version(info.LibraryVersion)
	}
	listed := map[uint]bool{}
	mechs, err := lib.GetMechanismList(slot)
	known := err == nil
	for _, m := range mechs {
		listed[m.Mechanism] = true
	}
	for _, sm := range signdMechanisms {
		m := Mechanism{Name: sm.name, typ: sm.typ, Present: !known || listed[sm.typ]}
		if known && m.Present {
			mi, err := lib.GetMechanismInfo(slot, []*pkcs11.Mechanism{pkcs11.NewMechanism(sm.typ, nil)})
			if err == nil {
				m.MinKeySize, m.MaxKeySize = mi.MinKeySize, mi.MaxKeySize
				m.Sign = mi.Flags&pkcs11.CKF_SIGN != 0
				m.GenerateKeyPair = mi.Flags&pkcs11.CKF_GENERATE_KEY_PAIR != 0
			} else {
				m.Sign, m.GenerateKeyPair = true, true // listed; its details unknown
			}
		} else if !known {
			m.Sign, m.GenerateKeyPair = true, true
		}
		c.Mechanisms = append(c.Mechanisms, m)
	}
	return c, nil
}

func version(v pkcs11.Version) string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// limit turns CK_UNAVAILABLE_INFORMATION (all ones) into 0, "no known
// limit", like CK_EFFECTIVELY_INFINITE.
func limit(n uint) uint {
	if n == ^uint(0) || n == uint(^uint32(0)) {
		return 0
	}
	return n
}

// AtLeast reports whether the module implements Cryptoki major.minor or
// later. An unknown version (no C_GetInfo) is not at least anything.
func (c *Capabilities) AtLeast(major, minor byte) bool {
	return c.major > major || c.major == major && c.minor >= minor
}

// Mechanism returns the entry of the mechanism named name
// ("CKM_RSA_PKCS_PSS"), or a zero Mechanism, not present.
func (c *Capabilities) Mechanism(name string) Mechanism {
	for _, m := range c.Mechanisms {
		if m.Name == name {
			return m
		}
	}
	return Mechanism{Name: name}
}

// CanSign reports whether the token lists mechanism name for signing.
func (c *Capabilities) CanSign(name string) bool {
	m := c.Mechanism(name)
	return m.Present && m.Sign
}

// fits reports whether a key of bits is within m's key sizes (0: no
// bound known).
func (m Mechanism) fits(bits int) bool {
	return (m.MinKeySize == 0 || uint(bits) >= m.MinKeySize) && (m.MaxKeySize == 0 || uint(bits) <= m.MaxKeySize)
}

// Token names the token for an operator: label, manufacturer and model.
func (c *Capabilities) Token() string {
	return fmt.Sprintf("token %q (%s)", c.Label, strings.TrimSpace(c.Manufacturer+" "+c.Model))
}

// CheckRSA returns nil when the token can generate RSA key pairs of bits
// (CKM_RSA_PKCS_KEY_PAIR_GEN with CKF_GENERATE_KEY_PAIR, bits within its
// key sizes) and sign with them (CKM_RSA_PKCS with CKF_SIGN), and an
// ckr.ErrUnsupportedAlgorithm naming what is missing otherwise.
func (c *Capabilities) CheckRSA(bits int) error {
	return c.checkRSA(bits, true)
}

func (c *Capabilities) checkRSA(bits int, suggest bool) error {
	instead := c.instead
	if !suggest {
		instead = func() string { return "" }
	}
	gen := c.Mechanism("CKM_RSA_PKCS_KEY_PAIR_GEN")
	switch {
	case !gen.Present || !gen.GenerateKeyPair:
		return fmt.Errorf("%w: %s has no CKM_RSA_PKCS_KEY_PAIR_GEN: RSA keys cannot be made on it%s", ckr.ErrUnsupportedAlgorithm, c.Token(), instead())
	case !c.CanSign("CKM_RSA_PKCS"):
		return fmt.Errorf("%w: %s has no CKM_RSA_PKCS for signing: RSA keys cannot sign on it%s", ckr.ErrUnsupportedAlgorithm, c.Token(), instead())
	case !gen.fits(bits):
		return fmt.Errorf("%w: %s makes RSA keys of %d to %d bits, not %d bits%s", ckr.ErrUnsupportedAlgorithm, c.Token(), gen.MinKeySize, gen.MaxKeySize, bits, instead())
	}
	return nil
}

// CheckEC is CheckRSA for ECDSA keys on curve: CKM_EC_KEY_PAIR_GEN and
// CKM_ECDSA, the curve's size within their key sizes.
func (c *Capabilities) CheckEC(curve elliptic.Curve) error {
	return c.checkEC(curve, true)
}

func (c *Capabilities) checkEC(curve elliptic.Curve, suggest bool) error {
	instead := c.instead
	if !suggest {
		instead = func() string { return "" }
	}
	bits := curve.Params().BitSize
	gen := c.Mechanism("CKM_EC_KEY_PAIR_GEN")
	switch {
	case !gen.Present || !gen.GenerateKeyPair:
		return fmt.Errorf("%w: %s has no CKM_EC_KEY_PAIR_GEN: EC keys cannot be made on it%s", ckr.ErrUnsupportedAlgorithm, c.Token(), instead())
	case !c.CanSign("CKM_ECDSA"):
		return fmt.Errorf("%w: %s has no CKM_ECDSA: EC keys cannot sign on it%s", ckr.ErrUnsupportedAlgorithm, c.Token(), instead())
	case !gen.fits(bits):
		return fmt.Errorf("%w: %s makes EC keys of %d to %d bits, not %s (%d bits)%s", ckr.ErrUnsupportedAlgorithm, c.Token(), gen.MinKeySize, gen.MaxKeySize, curve.Params().Name, bits, instead())
	}
	return nil
}

// KeyTypes names the key types signd makes that the token's mechanisms
// allow, as credential algorithms: "rsa-2048", ..., "ec-p521".
func (c *Capabilities) KeyTypes() []string {
	var out []string
	for _, bits := range []int{2048, 3072, 4096} {
		if c.checkRSA(bits, false) == nil {
			out = append(out, fmt.Sprintf("rsa-%d", bits))
		}
	}
	for _, curve := range []elliptic.Curve{elliptic.P256(), elliptic.P384(), elliptic.P521()} {
		if c.checkEC(curve, false) == nil {
			out = append(out, fmt.Sprintf("ec-p%d", curve.Params().BitSize))
		}
	}
	return out
}

// instead suggests the key types the token can make, for a refusal.
func (c *Capabilities) instead() string {
	if kt := c.KeyTypes(); len(kt) > 0 {
		return "; use one of " + strings.Join(kt, ", ")
	}
	return ""
}

// CanPSS reports whether the token signs RSASSA-PSS (CKM_RSA_PKCS_PSS
// with CKF_SIGN).
func (c *Capabilities) CanPSS() bool { return c.CanSign("CKM_RSA_PKCS_PSS") }

// LogValue is the one-line summary logged at start.
func (c *Capabilities) LogValue() slog.Value {
	var mechs []string
	for _, m := range c.Mechanisms {
		if !m.Present {
			continue
		}
		s := m.Name
		if m.MaxKeySize != 0 {
			s += fmt.Sprintf("(%d-%d)", m.MinKeySize, m.MaxKeySize)
		}
		mechs = append(mechs, s)
	}
	return slog.GroupValue(
		slog.String("module", c.Module),
		slog.String("library", strings.TrimSpace(c.LibraryVendor+" "+c.LibraryDescription+" "+c.LibraryVersion)),
		slog.String("cryptoki", c.CryptokiVersion),
		slog.String("manufacturer", c.Manufacturer),
		slog.String("model", c.Model),
		slog.String("firmware", c.FirmwareVersion),
		slog.String("mechanisms", strings.Join(mechs, " ")),
		slog.String("profile", c.Profile),
	)
}

// trimField trims the blank (and NUL) padding of a fixed-size PKCS#11
// text field.
func trimField(s string) string { return strings.Trim(s, " \x00") }
