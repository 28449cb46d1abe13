package config

// Console is the operator console at /console on the HTTP listener (DESIGN
// section 16): a static page, served to anyone, whose every API call
// carries the credentials its user gives it. On unless enabled is false.
type Console struct {
	Enabled bool `yaml:"enabled"`
}
