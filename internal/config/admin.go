package config

import (
	"path"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natsname"
)

// Admin lets callers create, update and delete consumers through the API
// (grant action admin), within these bounds (DESIGN section 18). Absent:
// those RPCs answer FAILED_PRECONDITION ADMIN_DISABLED.
type Admin struct {
	Streams           []string `yaml:"streams"`   // stream name patterns; required
	Consumers         []string `yaml:"consumers"` // consumer name patterns; required
	MaxAckWait        Duration `yaml:"max_ack_wait,omitempty"`
	MaxDeliver        int      `yaml:"max_deliver,omitempty"`
	MaxAckPending     int      `yaml:"max_ack_pending,omitempty"`
	MaxWaiting        int      `yaml:"max_waiting,omitempty"`
	MaxPerPrincipal   int      `yaml:"max_consumers_per_principal,omitempty"`
	InactiveThreshold Duration `yaml:"inactive_threshold,omitempty"`
}

// The admin block's bounds where it leaves them unset: generous for a
// service, small enough that one caller cannot take the server's memory.
const (
	DefaultAdminMaxAckWait        = time.Hour
	DefaultAdminMaxAckPending     = 10_000
	DefaultAdminMaxWaiting        = 512
	DefaultAdminMaxPerPrincipal   = 10
	DefaultAdminInactiveThreshold = 7 * 24 * time.Hour
)

// CoreAdmin is the admin block as the replica takes it, defaults filled;
// nil when there is none.
func (a *Admin) CoreAdmin() *consumer.Admin {
	if a == nil {
		return nil
	}
	or := func(v, def int) int {
		if v == 0 {
			return def
		}
		return v
	}
	orD := func(v Duration, def time.Duration) time.Duration {
		if v == 0 {
			return def
		}
		return time.Duration(v)
	}
	return &consumer.Admin{
		Streams: a.Streams, Consumers: a.Consumers,
		MaxAckWait:        orD(a.MaxAckWait, DefaultAdminMaxAckWait),
		MaxDeliver:        a.MaxDeliver,
		MaxAckPending:     or(a.MaxAckPending, DefaultAdminMaxAckPending),
		MaxWaiting:        or(a.MaxWaiting, DefaultAdminMaxWaiting),
		MaxPerPrincipal:   or(a.MaxPerPrincipal, DefaultAdminMaxPerPrincipal),
		InactiveThreshold: orD(a.InactiveThreshold, DefaultAdminInactiveThreshold),
	}
}

// validateAdmin checks the admin block: patterns that path.Match takes,
// none that reaches jetgate's own streams, no negative bound.
func (c *validator) validateAdmin() *Error {
	a := c.Admin
	if a == nil {
		return nil
	}
	for _, f := range []struct {
		path     string
		patterns []string
	}{{"admin.streams", a.Streams}, {"admin.consumers", a.Consumers}} {
		if len(f.patterns) == 0 {
			return c.errorf(f.path, "name at least one pattern (\"*\" for all)")
		}
		for _, p := range f.patterns {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				return c.errorf(f.path, "%s is not a pattern (path.Match: * ? [a-z])", quote(p))
			}
		}
	}
	for _, p := range a.Streams {
		if natsname.Internal(p) {
			return c.errorf("admin.streams", "%s is one of jetgate's own streams, never served", quote(p))
		}
	}
	for _, f := range []struct {
		path string
		v    int64
	}{{"admin.max_ack_wait", int64(a.MaxAckWait)}, {"admin.max_deliver", int64(a.MaxDeliver)}, {"admin.max_ack_pending", int64(a.MaxAckPending)},
		{"admin.max_waiting", int64(a.MaxWaiting)}, {"admin.max_consumers_per_principal", int64(a.MaxPerPrincipal)}, {"admin.inactive_threshold", int64(a.InactiveThreshold)}} {
		if f.v < 0 {
			return c.errorf(f.path, "must not be negative (0 or absent is the default)")
		}
	}
	if w := time.Duration(a.MaxAckWait); w > 0 && w < MinAckWait {
		// Every create would be refused: no ack_wait under it is taken.
		return c.errorf("admin.max_ack_wait", "%v: must be at least %v, the least ack_wait a consumer may have", w, MinAckWait)
	}
	return nil
}
