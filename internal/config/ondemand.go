package config

import (
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
)

func (c *validator) validateOnDemand() *Error {
	o := c.OnDemand
	for i, m := range o.Match {
		p := fmt.Sprintf("on_demand.match[%d]", i)
		for _, f := range [...]struct{ name, pattern string }{{"stream", m.Stream}, {"consumer", m.Consumer}} {
			switch _, err := path.Match(f.pattern, ""); {
			case f.pattern == "":
				return c.errorf(p+"."+f.name, "is empty: a glob pattern such as \"*\" or \"team-*\"")
			case err != nil:
				return c.errorf(p+"."+f.name, "%s: not a glob pattern (%v)", quote(f.pattern), err)
			case strings.ContainsAny(f.pattern, ". >"):
				return c.errorf(p+"."+f.name, "%s: stream and consumer names cannot contain '.', ' ' or '>'", quote(f.pattern))
			}
		}
	}
	// Named 0s, it would read as "never" and run as the default: refused.
	named := o.IdleUnbind != 0 || (c.origins != nil && c.named("on_demand.idle_unbind"))
	switch idle := time.Duration(o.IdleUnbind); {
	case idle < 0:
		return c.errorf("on_demand.idle_unbind", "%v: must not be negative", o.IdleUnbind)
	case named && len(o.Match) == 0:
		return c.errorf("on_demand.idle_unbind", "is set, but on_demand.match names no consumer: add a match, or remove the block")
	case named && idle < time.Second:
		return c.errorf("on_demand.idle_unbind", "%v: must be at least 1s (leave it out for the default, %v)", o.IdleUnbind, consumer.DefaultIdleUnbind)
	}
	return nil
}

// onDemandForm is the form of one --on-demand value.
const onDemandForm = "STREAM/CONSUMER, glob patterns (path.Match) of both, such as ORDERS/team-* or */*"

// applyOnDemandFlag sets on_demand.match from --on-demand, replacing the
// file's list.
func (c overlay) applyOnDemandFlag(f Flags, given func(string) bool) *Error {
	if !given("on-demand") || (c.file == "" && len(f.OnDemand) == 0) {
		return nil
	}
	match := make([]OnDemandMatch, 0, len(f.OnDemand))
	for _, v := range f.OnDemand {
		stream, name, ok := strings.Cut(v, "/")
		if !ok || stream == "" || name == "" || strings.Contains(name, "/") {
			return &Error{Flag: "--on-demand", Msg: fmt.Sprintf("%s: give %s", quote(v), onDemandForm)}
		}
		match = append(match, OnDemandMatch{Stream: stream, Consumer: name})
	}
	c.OnDemand.Match = match
	for p := range c.lines { // the file's list is gone: its errors are the flag's
		if strings.HasPrefix(p, "on_demand.match") {
			delete(c.lines, p)
		}
	}
	c.flags["on_demand.match"] = "--on-demand"
	return nil
}
