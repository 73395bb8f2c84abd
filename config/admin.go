package config

// AdminConfig is the admin.* section: how administrative acts are
// controlled.
type AdminConfig struct {
	// DualControlConfig is admin.dual_control and admin.pending_ttl
	// (dualcontrol.go).
	DualControlConfig `mapstructure:",squash"`
}

func adminKeys() []Key { return dualControlKeys() }

func (a *AdminConfig) checks() []check { return a.DualControlConfig.checks() }
