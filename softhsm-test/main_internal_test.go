package softhsmtest

import (
	"errors"
	"os"
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
