package hsm

import (
	"context"
	"crypto"
	"fmt"
	"testing"
)

func BenchmarkZZPoolSize(b *testing.B) {
	digest := digestOf(crypto.SHA256, []byte("benchmark"))
	for _, size := range []int{2, 8} {
		b.Run(fmt.Sprintf("pool-%d", size), func(b *testing.B) {
			cfg := config(mainTok)
			cfg.MaxSessions = size
			tok := openTest(b, cfg, options{})
			key, err := tok.Key(context.Background(), sharedKey.ID)
			if err != nil {
				b.Fatal(err)
			}
			benchSigners(b, func() error {
				_, err := key.SignDigest(context.Background(), crypto.SHA256, digest)
				return err
			})
		})
	}
}
