package csc

import (
	"runtime/trace"

	"github.com/labstack/echo/v4"
)

// traceTask makes every request of a route a runtime/trace task of type
// name while an execution trace is being taken (`go test -trace`, `signd
// serve --trace`), with the Bearer check (bearer) as its first region; the
// handler adds its own regions (signhash.go). When no trace is taken, it
// costs one atomic load per request.
//
// `signd-load phases` reads such a trace (through `go tool trace
// -d=parsed`) and prints each phase's latency percentiles.
func traceTask(name string, bearer echo.MiddlewareFunc) []echo.MiddlewareFunc {
	const key = "csc.traceRegion"
	begin := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !trace.IsEnabled() {
				return next(c)
			}
			ctx, task := trace.NewTask(c.Request().Context(), name)
			defer task.End()
			c.SetRequest(c.Request().WithContext(ctx))
			r := &tracedRegion{r: trace.StartRegion(ctx, "bearer")}
			defer r.end()
			c.Set(key, r)
			return next(c)
		}
	}
	checked := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if r, ok := c.Get(key).(*tracedRegion); ok {
				r.end()
			}
			return next(c)
		}
	}
	return []echo.MiddlewareFunc{begin, bearer, checked}
}

// tracedRegion is a region that may be ended from two places, once.
type tracedRegion struct {
	r     *trace.Region
	ended bool
}

func (t *tracedRegion) end() {
	if !t.ended {
		t.ended = true
		t.r.End()
	}
}
