package main

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/signd/signd/internal/logtest"
	"github.com/signd/signd/oauth/oauthtest"
)

// TestLogLinesCarryTheRequestID runs a login, the credential flow and
// signHash (refused, then signed) through the real daemon, SoftHSM2 token
// and bbolt file with DEBUG logging, and cuts the log at each access-log
// line: every line written while a request was served (the lines since the
// previous access-log line) carries that request's request_id. The
// signHash sent with its own valid X-Request-Id is logged under it.
func TestLogLinesCarryTheRequestID(t *testing.T) {
	e := newEnv(t, authLoginConfig+"log:\n  level: debug\n")
	cred := journeyAlice(t, e)
	logs := &syncBuffer{}
	addr, _ := e.startDaemonWith(func(a *app) { a.stderr = logs })
	base := "http://" + addr
	// Lines before the first request are the start's, the background
	// check of the keys' freeze included (its warnings carry no request).
	waitLog(t, logs, "hsm: checked the keys' freeze at start")
	start := len(logtest.Records(t, logs.String()))

	status, _, _ := rawPost(t, base+"/csc/v1/auth/login", map[string]string{"Authorization": basic("alice", "wrong password"), "X-Request-Id": "login-wrong"}, "")
	if status != 401 && status != 400 {
		t.Fatalf("auth/login with a wrong password: %d", status)
	}
	status, _, login := rawPost(t, base+"/csc/v1/auth/login", map[string]string{"Authorization": basic("alice", journeyPassword), "X-Request-Id": "login-ok"}, "")
	access, _ := login["access_token"].(string)
	if status != 200 || access == "" {
		t.Fatalf("auth/login: %d %v", status, login)
	}

	digest := sha256.Sum256([]byte("%PDF-1.7 logged under one request ID"))
	conf, ctx := journeyClient(base)
	code := loginFlow(t, oauthtest.NewBrowser(nil), conf, mustLogin, "credential", "st", oneSignature(cred, digest[:])...)
	sad, err := conf.Exchange(ctx, code)
	if err != nil {
		t.Fatal(err)
	}
	signHash := func(id string, hash []byte) int {
		status, _, _ := rawPost(t, base+"/csc/v1/signatures/signHash",
			map[string]string{"Authorization": "Bearer " + access, "Content-Type": "application/json", "X-Request-Id": id}, signHashBody(cred, sad.AccessToken, hash))
		return status
	}
	if status := signHash("sign-ok", digest[:]); status != 200 {
		t.Fatalf("signHash: %d", status)
	}
	// The SAD is spent: a second signHash is refused and logged.
	if status := signHash("sign-refused", digest[:]); status != 400 {
		t.Fatalf("signHash with a spent SAD: %d", status)
	}

	var pending []map[string]any
	byID := map[string][]string{}
	for _, l := range logtest.Records(t, logs.String())[start:] {
		if l["msg"] != "request" {
			pending = append(pending, l)
			continue
		}
		id, _ := l["request_id"].(string)
		if id == "" {
			t.Errorf("access-log line without request_id: %v", l)
		}
		for _, p := range pending {
			if p["request_id"] != id {
				t.Errorf("line written while serving %v %v (request_id %q) carries request_id %v: %v", l["method"], l["path"], id, p["request_id"], p)
			}
			byID[id] = append(byID[id], p["msg"].(string))
		}
		byID[id] = append(byID[id], "request "+l["path"].(string))
		pending = nil
	}
	for id, want := range map[string][]string{
		"login-wrong":  {"login failed", "request /csc/v1/auth/login"},
		"login-ok":     {"password login succeeded", "request /csc/v1/auth/login"},
		"sign-refused": {"csc: signHash refused", "request /csc/v1/signatures/signHash"},
		"sign-ok":      {"request /csc/v1/signatures/signHash"},
	} {
		for _, msg := range want {
			if !strings.Contains(strings.Join(byID[id], "\n"), msg) {
				t.Errorf("request %s: lines %q, want one %q", id, byID[id], msg)
			}
		}
	}
	t.Logf("lines by request: %q", byID)
}
