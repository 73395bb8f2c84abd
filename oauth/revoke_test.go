package oauth_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"

	"github.com/signd/signd/oauth"
	"github.com/signd/signd/oauth/authlogin"
	"github.com/signd/signd/oauth/oauthtest"
	"github.com/signd/signd/store/bolt"
	"github.com/signd/signd/store/storetest/backends"
)

// revokeEndpoints are the two ways alice's client rp revokes a token:
// POST /oauth2/revoke (RFC 7009, client authentication) and RevokeOwn,
// what CSC auth/revoke calls with the bearer's grant. Both are safe to
// call from several goroutines.
var revokeEndpoints = []struct {
	name   string
	revoke func(ev *env, token string) error
}{
	{"oauth2/revoke", func(ev *env, token string) error {
		resp, err := oauthtest.PostClientForm(ev.ts.Client(), ev.ts.URL+"/oauth2/revoke", url.Values{"token": {token}}, "rp", rpSecret)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("oauth2/revoke: %s", resp.Status)
		}
		return nil
	}},
	{"auth/revoke", func(ev *env, token string) error {
		return ev.srv.RevokeOwn(context.Background(), &oauth.Grant{Username: "alice", ClientID: "rp"}, token)
	}},
}

// TestRevokeRefreshEndsItsGrant: revoking a refresh token — the current
// one or one already rotated — revokes every access token of its grant,
// of every generation, and its refresh tokens (RFC 7009 §2.1); tokens of
// another grant of the same user and client (another password login, a
// code flow) keep working.
func TestRevokeRefreshEndsItsGrant(t *testing.T) {
	for _, ep := range revokeEndpoints {
		for _, which := range []string{"current", "rotated"} {
			t.Run(ep.name+"/"+which, func(t *testing.T) {
				ev := newEnv(t)
				pl := passwordLogin(t, ev, "rp")
				ctx := context.Background()
				first, err := pl.Login(ctx, "alice", alicePassword, true)
				if err != nil {
					t.Fatal(err)
				}
				second, err := pl.Refresh(ctx, first.RefreshToken)
				if err != nil {
					t.Fatal(err)
				}
				other, err := pl.Login(ctx, "alice", alicePassword, true)
				if err != nil {
					t.Fatal(err)
				}
				code, _ := ev.serviceCode(serviceParams())
				_, body := ev.tokenRequest(tokenForm(code), "rp", rpSecret)
				coded, _ := body["access_token"].(string)

				victim := second.RefreshToken
				if which == "rotated" {
					victim = first.RefreshToken
				}
				if err := ep.revoke(ev, victim); err != nil {
					t.Fatal(err)
				}
				for name, v := range map[string]string{"first access token": first.AccessToken, "second access token": second.AccessToken} {
					if st := bearerStatus(t, ev, "service", v); st != http.StatusUnauthorized {
						t.Errorf("%s of the revoked grant: %d, want 401", name, st)
					}
				}
				for name, v := range map[string]string{"first": first.RefreshToken, "second": second.RefreshToken} {
					if ev.token(v) != nil {
						t.Errorf("the %s refresh token of the revoked grant is still stored", name)
					}
				}
				if _, err := pl.Refresh(ctx, second.RefreshToken); !errors.Is(err, authlogin.ErrRefreshInvalid) {
					t.Errorf("refresh with the revoked grant's refresh token = %v, want ErrRefreshInvalid", err)
				}
				for name, v := range map[string]string{"another login's access token": other.AccessToken, "a code flow's access token": coded} {
					if st := bearerStatus(t, ev, "service", v); st != http.StatusOK {
						t.Errorf("%s after the revocation: %d, want 200", name, st)
					}
				}
				if _, err := pl.Refresh(ctx, other.RefreshToken); err != nil {
					t.Errorf("another login's refresh token after the revocation: %v", err)
				}
			})
		}
	}
}

// TestRevokeRacesRefresh: a refresh token is exchanged and revoked at
// the same moment, again and again, over the memory store and a bbolt
// file. Whichever transaction commits first, no access or refresh token
// of the grant is alive afterwards: a refresh that lost sees no refresh
// token, one that won minted tokens of the family the revocation then
// removes.
func TestRevokeRacesRefresh(t *testing.T) {
	const rounds = 25
	stores := map[string]func(t *testing.T) *env{
		"memory": func(t *testing.T) *env { return newEnv(t) },
		"bolt": func(t *testing.T) *env {
			db := backends.Bolt(t, bolt.Options{})
			return buildEnv(t, db, false)
		},
	}
	for storeName, newStoreEnv := range stores {
		for _, ep := range revokeEndpoints {
			t.Run(storeName+"/"+ep.name, func(t *testing.T) {
				testRevokeRacesRefresh(t, newStoreEnv(t), ep.revoke, rounds)
			})
		}
	}
}

func testRevokeRacesRefresh(t *testing.T, ev *env, revoke func(ev *env, token string) error, rounds int) {
	pl := passwordLogin(t, ev, "rp")
	won := 0
	for range rounds {
		login, err := pl.Login(context.Background(), "alice", alicePassword, true)
		if err != nil {
			t.Fatal(err)
		}
		var (
			refreshed          *authlogin.Tokens
			refreshErr, revErr error
			wg                 sync.WaitGroup
		)
		start := make(chan struct{})
		wg.Go(func() {
			<-start
			refreshed, refreshErr = pl.Refresh(context.Background(), login.RefreshToken)
		})
		wg.Go(func() {
			<-start
			revErr = revoke(ev, login.RefreshToken)
		})
		close(start)
		wg.Wait()
		if revErr != nil {
			t.Fatal(revErr)
		}
		live := map[string]string{"the login's access token": login.AccessToken}
		switch {
		case refreshErr == nil:
			won++
			live["the access token the refresh minted"] = refreshed.AccessToken
			if _, err := pl.Refresh(context.Background(), refreshed.RefreshToken); !errors.Is(err, authlogin.ErrRefreshInvalid) {
				t.Errorf("the refresh token minted in the race still refreshes: %v", err)
			}
		case !errors.Is(refreshErr, authlogin.ErrRefreshInvalid):
			t.Fatalf("refresh: %v", refreshErr)
		}
		for name, v := range live {
			if st := bearerStatus(t, ev, "service", v); st != http.StatusUnauthorized {
				t.Errorf("%s after the race: %d, want 401", name, st)
			}
		}
	}
	t.Logf("%d of %d refreshes committed before the revocation", won, rounds)
}
