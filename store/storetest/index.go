package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/signd/signd/store"
)

// Owner index: listings by owner are exact, ordered and pageable.

func testOwnerIndex(t *testing.T, s store.Store) {
	// Usernames that are prefixes of each other must not leak into one
	// another's listing.
	createUsers(t, s, "a", "ab", "b")
	update(t, s, func(tx store.Tx) error {
		for _, c := range []*store.Credential{
			newCredential("1", "ab"), newCredential("2", "a"), newCredential("3", "b"),
			newCredential("4", "a"), newCredential("5", "ab"),
		} {
			if err := tx.CreateCredential(c); err != nil {
				return err
			}
		}
		return nil
	})
	for _, tc := range []struct {
		owner string
		want  []string
	}{
		{"a", []string{"2", "4"}},
		{"ab", []string{"1", "5"}},
		{"b", []string{"3"}},
		{"nobody", nil},
		{"", []string{"1", "2", "3", "4", "5"}},
	} {
		t.Run("owner="+tc.owner, func(t *testing.T) {
			cs := listCredentials(t, s, tc.owner, "", 0)
			if got := credentialIDs(cs); !slices.Equal(got, tc.want) {
				t.Errorf("Credentials(%q) = %v, want %v", tc.owner, got, tc.want)
			}
			for _, c := range cs {
				if tc.owner != "" && c.Owner != tc.owner {
					t.Errorf("Credentials(%q) listed %s of %s", tc.owner, c.ID, c.Owner)
				}
			}
		})
	}
	err := s.View(context.Background(), func(tx store.Tx) error {
		_, err := tx.Credentials("../a", "", 0)
		return err
	})
	wantErr(t, "Credentials(../a)", err, store.ErrInvalid)
}

// page collects everything Credentials(owner) yields in pages of limit,
// failing if a page is longer than limit.
func page(t *testing.T, s store.Store, owner string, limit int) []string {
	t.Helper()
	var ids []string
	after := ""
	for range 1000 {
		cs := listCredentials(t, s, owner, after, limit)
		if len(cs) > limit {
			t.Fatalf("page of %d with limit %d", len(cs), limit)
		}
		if len(cs) == 0 {
			return ids
		}
		ids = append(ids, credentialIDs(cs)...)
		after = cs[len(cs)-1].ID
	}
	t.Fatal("paging did not end")
	return nil
}

func testOwnerIndexPaging(t *testing.T, s store.Store) {
	createUsers(t, s, "alice", "bob")
	var aliceIDs, bobIDs []string
	update(t, s, func(tx store.Tx) error {
		for i := range 23 {
			owner := "alice"
			if i%3 == 0 {
				owner = "bob"
			}
			id := mustID(t)
			if err := tx.CreateCredential(newCredential(id, owner)); err != nil {
				return err
			}
			if owner == "alice" {
				aliceIDs = append(aliceIDs, id)
			} else {
				bobIDs = append(bobIDs, id)
			}
		}
		return nil
	})
	slices.Sort(aliceIDs)
	slices.Sort(bobIDs)
	for _, limit := range []int{1, 2, 5, 15, 16, 100} {
		t.Run(fmt.Sprintf("limit=%d", limit), func(t *testing.T) {
			if got := page(t, s, "alice", limit); !slices.Equal(got, aliceIDs) {
				t.Errorf("alice paged by %d = %v, want %v", limit, got, aliceIDs)
			}
			if got := page(t, s, "bob", limit); !slices.Equal(got, bobIDs) {
				t.Errorf("bob paged by %d = %v, want %v", limit, got, bobIDs)
			}
		})
	}
	if got := credentialIDs(listCredentials(t, s, "alice", "", 0)); !slices.Equal(got, aliceIDs) {
		t.Errorf("alice unpaged = %v, want %v", got, aliceIDs)
	}
	// after need not be an existing ID: listing resumes at the next one.
	mid := aliceIDs[4]
	after := mid[:len(mid)-1]
	if got := credentialIDs(listCredentials(t, s, "alice", after, 1)); !slices.Equal(got, []string{mid}) {
		t.Errorf("Credentials(alice, %q, 1) = %v, want [%s]", after, got, mid)
	}
	// after one of bob's IDs, alice's listing continues with her next one.
	b := bobIDs[0]
	want := []string{}
	for _, id := range aliceIDs {
		if id > b {
			want = append(want, id)
		}
	}
	if got := credentialIDs(listCredentials(t, s, "alice", b, 0)); !slices.Equal(got, want) {
		t.Errorf("Credentials(alice, bob's %s) = %v, want %v", b, got, want)
	}
}

func testOwnerChange(t *testing.T, s store.Store) {
	createUsers(t, s, "alice", "bob")
	update(t, s, func(tx store.Tx) error {
		for _, id := range []string{"c1", "c2", "c3"} {
			if err := tx.CreateCredential(newCredential(id, "alice")); err != nil {
				return err
			}
		}
		return nil
	})
	update(t, s, func(tx store.Tx) error {
		c, err := tx.Credential("c2")
		if err != nil {
			return err
		}
		c.Owner = "bob"
		return tx.PutCredential(c)
	})
	if got := credentialIDs(listCredentials(t, s, "alice", "", 0)); !slices.Equal(got, []string{"c1", "c3"}) {
		t.Errorf("alice after move = %v", got)
	}
	if got := credentialIDs(listCredentials(t, s, "bob", "", 0)); !slices.Equal(got, []string{"c2"}) {
		t.Errorf("bob after move = %v", got)
	}
	if got := getCredential(t, s, "c2").Owner; got != "bob" {
		t.Errorf("c2 owner = %q", got)
	}
	// A put without an owner change leaves the index alone.
	update(t, s, func(tx store.Tx) error {
		c, err := tx.Credential("c2")
		if err != nil {
			return err
		}
		c.Status = store.CredentialDisabled
		return tx.PutCredential(c)
	})
	if got := credentialIDs(listCredentials(t, s, "bob", "", 0)); !slices.Equal(got, []string{"c2"}) {
		t.Errorf("bob after a put = %v", got)
	}
	if got := credentialIDs(listCredentials(t, s, "", "", 0)); !slices.Equal(got, []string{"c1", "c2", "c3"}) {
		t.Errorf("all after moves = %v", got)
	}
}

func testAllCredentialsPaging(t *testing.T, s store.Store) {
	createUsers(t, s, "alice", "bob")
	var ids []string
	update(t, s, func(tx store.Tx) error {
		for i := range 11 {
			id := mustID(t)
			ids = append(ids, id)
			if err := tx.CreateCredential(newCredential(id, []string{"alice", "bob"}[i%2])); err != nil {
				return err
			}
		}
		return nil
	})
	slices.Sort(ids)
	for _, limit := range []int{1, 3, 11, 50} {
		if got := page(t, s, "", limit); !slices.Equal(got, ids) {
			t.Errorf("all paged by %d = %v, want %v", limit, got, ids)
		}
	}
}
