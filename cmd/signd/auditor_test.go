package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestAuditorAnswersFromExport: against the real daemon, its bbolt file
// and SoftHSM, two operators on the admin socket — root, and uid 65534 in
// the admin group — administer alice and her credential, with
// credential_remove under dual control; alice's password is tried wrong
// over auth/login. The auditor then answers, from `signd audit export`
// and its filters alone (the queries of docs/ADMINISTRATION.md), who
// created, disabled and removed the credential, who approved its key's
// destruction, who changed alice's password and who unlocked her, and
// every failed login with its address.
func TestAuditorAnswersFromExport(t *testing.T) {
	rootName, nobodyName := twoOperators(t)
	e := newEnv(t, authLoginConfig+"admin:\n  dual_control: [credential_remove]\n")
	addr, _ := e.startDaemon()
	base := "http://" + addr
	socket := filepath.Join(e.dir, "s.sock")
	chown(t, e.dir, 0, nobody)
	chmod(t, e.dir, 0o750)
	asNobody := func(method, body string) {
		t.Helper()
		if status, answer := callOneAs(t, socket, nobody, nobody, method, body); status != "status 200" {
			t.Fatalf("%s as uid 65534: %s %s", method, status, answer)
		}
	}

	// root adds alice and rp and enrolls, disables and asks to remove
	// alice's credential; uid 65534 approves the removal.
	cred := journeyAlice(t, e)
	e.must("", "credential", "disable", cred)
	_, _, err := e.run("", "credential", "remove", cred)
	held := regexp.MustCompile(`^pending request ([a-z2-7]{26}): `).FindStringSubmatch(fmt.Sprint(err))
	if held == nil {
		t.Fatalf("credential remove under dual control: %v", err)
	}
	asNobody("ApprovePending", fmt.Sprintf(`{"Name":%q}`, held[1]))
	// Two wrong passwords over auth/login (CSC v1 §11.1), then uid 65534
	// sets a new one and unlocks her.
	for range 2 {
		if a := authLoginRaw(t, base, "alice", "not alice's password"); a.status != 401 && a.status != 400 {
			t.Fatalf("auth/login with a wrong password: %d %s", a.status, a.body)
		}
	}
	asNobody("SetPassword", fmt.Sprintf(`{"username":"alice","secret":%q}`, journeyPassword+" renewed"))
	asNobody("UnlockUser", `{"Name":"alice"}`)

	// export runs `signd audit export` with the filters and returns each
	// line as "kind actor target outcome" and the fields named.
	export := func(fields []string, filters ...string) []string {
		t.Helper()
		var out []string
		for l := range strings.Lines(e.must("", append([]string{"audit", "export"}, filters...)...)) {
			var m struct {
				Kind, Actor, Target, Outcome, User, IP, Reason string
				Fields                                         map[string]string
			}
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("export line %q: %v", l, err)
			}
			s := fmt.Sprintf("%s %s %s %s", m.Kind, m.Actor, m.Target, m.Outcome)
			for _, f := range fields {
				v := m.Fields[f]
				switch f {
				case "user":
					v = m.User
				case "ip":
					v = m.IP
				case "reason":
					v = m.Reason
				}
				s += fmt.Sprintf(" %s=%s", f, v)
			}
			out = append(out, s)
		}
		return out
	}
	check := func(question string, got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Errorf("%s:\n%s\nwant:\n%s", question, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	credential := "credential:" + cred

	check("who created, disabled and removed the credential, and who approved the removal",
		export([]string{"approved_by"}, "--target", credential,
			"--kind", "credential_enrolled", "--kind", "credential_disabled", "--kind", "credential_removed"),
		"credential_enrolled "+rootName+" "+credential+" pending approved_by=",
		"credential_enrolled "+rootName+" "+credential+" enabled approved_by=",
		"credential_disabled "+rootName+" "+credential+" ok approved_by=",
		"credential_removed "+rootName+" "+credential+" ok approved_by="+nobodyName)
	check("who approved each key destruction",
		export([]string{"op", "requested_by"}, "--kind", "pending_approved"),
		"pending_approved "+nobodyName+"  ok op=RemoveCredential requested_by="+rootName)
	check("who changed each user's password or unlocked them",
		export([]string{"password", "lock"}, "--kind", "user_password_set", "--kind", "user_unlocked"),
		"user_password_set "+nobodyName+" user:alice ok password=changed lock=",
		"user_unlocked "+nobodyName+" user:alice ok password= lock=password")
	var failed []string
	for _, l := range export([]string{"user", "ip", "reason"}, "--kind", "login") {
		if !strings.Contains(l, " ok user=") {
			failed = append(failed, l)
		}
	}
	check("every failed login with its address", failed,
		"login  user:alice failed user=alice ip=127.0.0.1 reason=wrong password",
		"login  user:alice failed user=alice ip=127.0.0.1 reason=wrong password")
	// One operator's acts, by the actor filter: uid 65534's.
	check("what uid 65534 did", export(nil, "--actor", nobodyName),
		"pending_approved "+nobodyName+"  ok",
		"user_password_set "+nobodyName+" user:alice ok",
		"user_unlocked "+nobodyName+" user:alice ok")
}
