package chromiumtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// SkipEnv is the environment variable that skips the browser tests on a
// machine without Chromium (SIGND_SKIP_BROWSER=1); without it a missing
// Chromium fails the test.
const SkipEnv = "SIGND_SKIP_BROWSER"

// Start launches headless Chromium with a fresh profile and returns the
// context its actions run in; everything stops when the test ends or
// after timeout.
func Start(t testing.TB, timeout time.Duration) context.Context {
	t.Helper()
	if os.Getenv(SkipEnv) == "1" {
		t.Skip(SkipEnv + "=1")
	}
	chromium := ""
	for _, name := range []string{"chromium", "/usr/bin/chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			chromium = p
			break
		}
	}
	if chromium == "" {
		t.Fatal("the browser test needs Chromium: apt-get install chromium (or set " + SkipEnv + "=1 to skip it)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	actx, acancel := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(chromium),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("window-size", "900,1000"),
		chromedp.UserDataDir(t.TempDir()),
	)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		bcancel()
		acancel()
		cancel()
	})
	return bctx
}

// Steps returns a function that runs steps in ctx and fails the test with
// what it was doing when one of them fails.
func Steps(t testing.TB, ctx context.Context) func(what string, steps ...chromedp.Action[chromedp.Void]) {
	return func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
}

// ArtifactsDir is where a test keeps its screenshots: $SIGND_TEST_ARTIFACTS
// or def, with sub appended; created if missing.
func ArtifactsDir(t testing.TB, def, sub string) string {
	t.Helper()
	dir := os.Getenv("SIGND_TEST_ARTIFACTS")
	if dir == "" {
		dir = def
	}
	dir = filepath.Join(dir, sub)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Console collects what the pages of ctx write to the console and the
// browser log (a CSP violation is one) from now until the test ends.
type Console struct {
	mu       sync.Mutex
	messages []chromedp.ConsoleMessage
}

// WatchConsole starts collecting the console of ctx's target.
func WatchConsole(t testing.TB, ctx context.Context) *Console {
	t.Helper()
	cctx, cancel := context.WithCancel(ctx)
	c := &Console{}
	messages := chromedp.Console(cctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages {
			if err != nil {
				return
			}
			c.mu.Lock()
			c.messages = append(c.messages, m)
			c.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return c
}

// Messages returns the messages collected so far.
func (c *Console) Messages() []chromedp.ConsoleMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]chromedp.ConsoleMessage(nil), c.messages...)
}
