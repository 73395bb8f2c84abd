// Package sdnotify is the service manager's side of sd_notify(3) for
// signd serve in a unit of Type=notify (packaging/signd.service): READY=1
// once the daemon is ready, WATCHDOG=1 while WatchdogSec= asks for it,
// STOPPING=1 at shutdown (Start), and any other state (Send: RELOADING=1
// and READY=1 around a SIGHUP reload). Outside systemd it does nothing.
package sdnotify
