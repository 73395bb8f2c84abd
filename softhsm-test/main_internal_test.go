package softhsmtest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runner is a Runner that records the token it ran with.
type runner struct {
	ran  bool
	conf string // SOFTHSM2_CONF during Run
	code int
}

func (r *runner) Run() int {
	r.ran = true
	r.conf = os.Getenv("SOFTHSM2_CONF")
	return r.code
}

func TestMainRunsWithToken(t *testing.T) {
	errSetup := errors.New("setup failed")
	tests := []struct {
		name         string
		code         int  // what Run returns
		noSetup      bool // pass a nil setup
		setupErr     error
		want         int
		wantRun      bool
		wantTeardown bool
	}{
		{name: "nil setup", noSetup: true, code: 3, want: 3, wantRun: true},
		{name: "setup and teardown", code: 0, want: 0, wantRun: true, wantTeardown: true},
		{name: "failing setup still tears down", setupErr: errSetup, want: 1, wantTeardown: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("SOFTHSM2_CONF", os.Getenv("SOFTHSM2_CONF")) // restored after the test
			t.Setenv(EnvLabel, "")                                // a SoftHSM2 token of its own
			r := &runner{code: tt.code}
			var tok *Token
			tornDown := false
			var setup func(*Token) (func(), error)
			if !tt.noSetup {
				setup = func(got *Token) (func(), error) {
					tok = got
					if _, err := os.Stat(got.Conf); err != nil {
						t.Errorf("setup: token config: %v", err)
					}
					return func() { tornDown = true }, tt.setupErr
				}
			}
			if got := Main(r, "main-test", setup); got != tt.want {
				t.Errorf("Main = %d, want %d", got, tt.want)
			}
			if r.ran != tt.wantRun {
				t.Errorf("ran = %v, want %v", r.ran, tt.wantRun)
			}
			if tornDown != tt.wantTeardown {
				t.Errorf("torn down = %v, want %v", tornDown, tt.wantTeardown)
			}
			if tt.wantRun && r.conf == "" {
				t.Error("Run saw no SOFTHSM2_CONF")
			}
			if tok != nil {
				if _, err := os.Stat(tok.Dir); !os.IsNotExist(err) {
					t.Errorf("token dir %s left behind: %v", tok.Dir, err)
				}
			}
		})
	}
}

// TestFromEnv: SIGND_TEST_PKCS11_LABEL hands the tests an existing token,
// which needs its module and PIN; without it the tests make SoftHSM2
// tokens, and SIGND_TEST_PKCS11_MODULE alone only moves SoftHSM2.
func TestFromEnv(t *testing.T) {
	module := filepath.Join(t.TempDir(), "libtoken.so")
	if err := os.WriteFile(module, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name               string
		module, label, pin string
		wantToken          bool
		wantErr            string
		wantSoftHSM2Module string // what Module() answers
	}{
		{name: "nothing set", wantSoftHSM2Module: DefaultModule},
		{name: "module alone moves SoftHSM2", module: module, wantSoftHSM2Module: module},
		{name: "existing token", module: module, label: "ock", pin: "1234", wantToken: true, wantSoftHSM2Module: DefaultModule},
		{name: "no PIN", module: module, label: "ock", wantErr: EnvPIN},
		{name: "no module", label: "ock", pin: "1234", wantErr: EnvModule},
		{name: "missing module", module: module + ".gone", label: "ock", pin: "1234", wantErr: module + ".gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvModule, tt.module)
			t.Setenv(EnvLabel, tt.label)
			t.Setenv(EnvPIN, tt.pin)
			t.Setenv(EnvSpareLabels, "")
			tok, err := FromEnv()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FromEnv: %v, %v; want an error naming %s", tok, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "1234") {
					t.Errorf("the PIN is in the error: %v", err)
				}
				return
			}
			if err != nil || (tok != nil) != tt.wantToken {
				t.Fatalf("FromEnv = %+v, %v", tok, err)
			}
			if tok != nil && (tok.Label != tt.label || tok.PIN != tt.pin || tok.Module != module || !tok.External) {
				t.Errorf("token %+v", tok)
			}
			if m, err := Module(); err != nil || m != tt.wantSoftHSM2Module {
				t.Errorf("Module() = %q, %v; want %q", m, err, tt.wantSoftHSM2Module)
			}
		})
	}
}

// TestExistingTokenSpares: AddToken on an existing token hands out the
// spare tokens once each, with the main token's PIN, then refuses; Remove
// is refused; Main runs setup with the token and makes no directory.
func TestExistingTokenSpares(t *testing.T) {
	module := filepath.Join(t.TempDir(), "libtoken.so")
	if err := os.WriteFile(module, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvModule, module)
	t.Setenv(EnvLabel, "main")
	t.Setenv(EnvPIN, "12345678")
	t.Setenv(EnvSpareLabels, " spare-1  spare-2 ")
	r := &runner{}
	var got *Token
	code := Main(r, "unused-label", func(tok *Token) (func(), error) {
		got = tok
		return nil, nil
	})
	if code != 0 || !r.ran || got == nil || got.Label != "main" || got.Dir != "" {
		t.Fatalf("Main = %d, ran %v, token %+v", code, r.ran, got)
	}
	for _, want := range []string{"spare-1", "spare-2"} {
		spare, err := got.AddToken("asked-for")
		if err != nil || spare.Label != want || spare.PIN != "12345678" || spare.Module != module || !spare.External {
			t.Fatalf("AddToken = %+v, %v; want %s", spare, err, want)
		}
	}
	if spare, err := got.AddToken("one more"); !errors.Is(err, ErrNoSpareToken) {
		t.Fatalf("AddToken with no spare left = %+v, %v", spare, err)
	}
	if _, err := got.Remove(); !errors.Is(err, ErrExternal) {
		t.Fatalf("Remove on an existing token: %v", err)
	}
}
