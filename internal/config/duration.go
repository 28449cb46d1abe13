package config

import (
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written as a string: "30s", "1m", "1h30m".
type Duration time.Duration

// UnmarshalYAML reads a duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseDuration(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{err.Error()}}
	}
	*d = v
	return nil
}

// MarshalYAML writes the shortest form: "1m", not "1m0s".
func (d Duration) MarshalYAML() (any, error) { return d.String(), nil }

func (d Duration) String() string {
	s := time.Duration(d).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// durationError says what a duration looks like.
type durationError struct{ value string }

func (e durationError) Error() string {
	return strings.TrimSpace(quote(e.value) + " is not a duration (write it with a unit: 500ms, 30s, 1m, 1h30m)")
}

func parseDuration(s string) (Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, durationError{s}
	}
	return Duration(d), nil
}
