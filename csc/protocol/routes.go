package protocol

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// Routes registers CSC methods on the /csc/v1 group and keeps their names
// in the order they were registered: info lists them, and the methods of
// the specification that none registered answer 501.
type Routes struct {
	group   *echo.Group
	methods []string
}

// NewRoutes returns the Routes of g, the /csc/v1 group.
func NewRoutes(g *echo.Group) *Routes { return &Routes{group: g} }

// Method registers the CSC method name, POST only (PostOnly runs before
// mw, the bearer check among them).
func (r *Routes) Method(name string, fn echo.HandlerFunc, mw ...echo.MiddlewareFunc) {
	r.group.Any("/"+name, fn, append([]echo.MiddlewareFunc{PostOnly}, mw...)...)
	r.methods = append(r.methods, name)
}

// Methods returns the names registered so far, in order.
func (r *Routes) Methods() []string { return r.methods }

// PostOnly refuses every HTTP method but POST (CSC v1 §7.1) before the
// bearer is looked at.
func PostOnly(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if c.Request().Method != http.MethodPost {
			return echo.ErrMethodNotAllowed
		}
		return next(c)
	}
}
