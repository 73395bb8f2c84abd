package main

import (
	"context"
	"time"

	"github.com/signd/signd/cmd/signd/sweeper"
	"github.com/signd/signd/oauth"
	"github.com/signd/signd/store/etcd"
)

// commitStats is a backend that counts its commits; *etcd.DB is one.
type commitStats interface{ Stats() etcd.Stats }

// startSweeper starts the background sweep of expired records: on this
// node alone for bbolt, on the elected node for etcd. stop ends it.
func (s *services) startSweeper(srv *oauth.Server, interval time.Duration) (stop func()) {
	el, ok := s.store.(sweeper.Elector)
	if !ok {
		return srv.StartSweeper(interval)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		sweeper.Lead(ctx, el, interval, srv.StartSweeper, s.logger.With("service", "oauth"))
	}()
	return func() {
		cancel()
		<-done
	}
}
