package signhash

import (
	"runtime/trace"

	"github.com/labstack/echo/v4"
)

// traceTask is bearer, and while an execution trace is being taken
// (runtime/trace: `go test -trace`, `signd serve --trace`) it also makes
// each request a trace task of type name with the Bearer check as its
// first region; the handler adds its own regions (signhash.go). Echo
// builds a route's middleware chain for every request, so without a trace
// the chain is exactly bearer's: nothing is added or allocated.
//
// `signd-load phases` reads such a trace and prints each phase's latency
// percentiles.
func traceTask(name string, bearer echo.MiddlewareFunc) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if !trace.IsEnabled() {
			return bearer(next)
		}
		return func(c echo.Context) error {
			ctx, task := trace.NewTask(c.Request().Context(), name)
			defer task.End()
			c.SetRequest(c.Request().WithContext(ctx))
			r := trace.StartRegion(ctx, "bearer")
			ended := false
			end := func() {
				if !ended {
					ended = true
					r.End()
				}
			}
			defer end()
			return bearer(func(c echo.Context) error {
				end()
				return next(c)
			})(c)
		}
	}
}
