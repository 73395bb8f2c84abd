package signhash

import (
	"bytes"
	"context"
	"crypto"
	"fmt"
	"runtime/trace"
)

// signing is the HSM work of one granted signHash request. It starts in
// the consuming transaction, as soon as that transaction has granted, and
// runs while the transaction commits: the request then takes the longer of
// the two rather than their sum. Its signatures are released only when the
// transaction committed with a grant for the same key (signed); when the
// commit fails or the committed run refused, they are dropped unseen.
//
// Everything the daemon guarantees holds: a signature leaves only after its
// SAD's consumption and its audit entry are durable; a request that loses
// the race for a SAD never gets one; the SAD is given back only after its
// consumption committed and only when no signature was made (signFailed).
type signing struct {
	keyID []byte
	done  chan struct{}
	res   signResult
	panic any // a panic of the Signer, raised again in the handler
}

// signResult is the outcome of signing a request's hashes.
type signResult struct {
	sigs [][]byte // one per hash, request order; nil on failure
	err  error
}

// startSigning signs hashes with keyID in a goroutine. keyID is copied:
// the transaction that read it may end first.
func (h *Handler) startSigning(ctx context.Context, keyID []byte, opts crypto.SignerOpts, hashes [][]byte) *signing {
	s := &signing{keyID: bytes.Clone(keyID), done: make(chan struct{})}
	if trace.IsEnabled() {
		trace.Log(ctx, "csc", "sign.spawn") // for the phase table: when the signing was started
	}
	go func() {
		defer close(s.done)
		defer func() { s.panic = recover() }()
		defer trace.StartRegion(ctx, "sign").End()
		s.res = h.sign(ctx, s.keyID, opts, hashes)
	}()
	return s
}

// wait returns the outcome once the signing ended. Every started signing
// is waited for, so none outlives its request (nor the HSM's shutdown).
func (s *signing) wait() signResult {
	<-s.done
	if s.panic != nil {
		panic(s.panic)
	}
	return s.res
}

// signed returns the signatures of a committed grant for keyID: those of
// the signing in flight when it used the same key, else (an earlier run
// of the transaction granted with another key, which only a concurrent
// change of the credential can cause) made now.
func (h *Handler) signed(ctx context.Context, s *signing, keyID []byte, opts crypto.SignerOpts, hashes [][]byte) signResult {
	if s != nil {
		res := s.wait()
		if bytes.Equal(s.keyID, keyID) {
			return res
		}
	}
	return h.sign(ctx, keyID, opts, hashes)
}

// sign signs the digests with opts (the request's signAlgo) in one
// Signer call: one pooled HSM session for the whole request.
func (h *Handler) sign(ctx context.Context, keyID []byte, opts crypto.SignerOpts, hashes [][]byte) signResult {
	sigs, err := h.Signer.SignDigests(ctx, keyID, opts, hashes)
	if err == nil && len(sigs) != len(hashes) {
		err = fmt.Errorf("csc: the signer returned %d signatures for %d hashes", len(sigs), len(hashes))
	}
	if err != nil {
		return signResult{err: err}
	}
	return signResult{sigs: sigs}
}
