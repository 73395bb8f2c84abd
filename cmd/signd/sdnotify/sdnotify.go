package sdnotify

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
)

// readyRetry is how often Start asks again whether the daemon is
// ready while the token or the store does not answer yet.
const readyRetry = time.Second

// Start speaks the service manager's side of sd_notify(3) for a
// unit of Type=notify (packaging/signd.service): READY=1 once ready
// answers true, which signd serve asks only after the listeners accept and which
// is /readyz's verdict (token and store answer, the store can write);
// WATCHDOG=1 every half of WatchdogSec= when the unit sets one
// (WATCHDOG_USEC), from the moment the listeners accept, whatever the
// token's state: the daemon rides out an HSM outage on its own, and a
// restart would not bring the token back sooner. The returned stopping
// stops both, then sends STOPPING=1, after READY=1 if that was sent.
//
// Outside systemd (no NOTIFY_SOCKET) it does nothing. A datagram that
// cannot be sent is logged and not retried: systemd either hears READY=1
// or times the start out (TimeoutStartSec=), which is what an operator
// should see.
func Start(ctx context.Context, logger *slog.Logger, ready func(context.Context) bool) (stopping func()) {
	if os.Getenv("NOTIFY_SOCKET") == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(readyRetry)
		defer tick.Stop()
		for !ready(ctx) {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
		Send(logger, daemon.SdNotifyReady)
	}()
	interval, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		logger.Warn("systemd: ignoring the watchdog setting", "err", err)
	}
	if interval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(interval / 2)
			defer tick.Stop()
			for {
				Send(logger, daemon.SdNotifyWatchdog)
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		}()
	}
	return func() {
		cancel()
		wg.Wait()
		Send(logger, daemon.SdNotifyStopping)
	}
}

// Send sends one state to NOTIFY_SOCKET, logging a failure.
func Send(logger *slog.Logger, state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		logger.Warn("systemd: notify failed", "state", state, "err", err)
	}
}
