package auth

import (
	"fmt"
	"path"
	"slices"
	"strings"
)

// Grant lets a principal take actions on consumers of a stream; "*" is any
// stream or consumer. Publish is granted per stream (consumers are not
// read for it).
type Grant struct {
	Principal string
	Stream    string
	Consumers []string
	Actions   []Action
}

func checkGrants(gs []Grant) ([]Grant, error) {
	for i, g := range gs {
		switch {
		case g.Principal == "":
			return nil, fmt.Errorf("auth.grants[%d].principal is required", i)
		case g.Stream == "":
			return nil, fmt.Errorf("auth.grants[%d].stream is required (\"*\" for any)", i)
		case len(g.Actions) == 0:
			return nil, fmt.Errorf("auth.grants[%d].actions: give at least one of %s", i, actionNames())
		}
		for j, p := range append([]string{g.Stream}, g.Consumers...) {
			if _, err := path.Match(p, ""); err != nil {
				field := "stream"
				if j > 0 {
					field = fmt.Sprintf("consumers[%d]", j-1)
				}
				return nil, fmt.Errorf("auth.grants[%d].%s: %q is not a pattern (path.Match: * ? [a-z])", i, field, p)
			}
		}
		for _, a := range g.Actions {
			if !slices.Contains(Actions, a) {
				return nil, fmt.Errorf("auth.grants[%d].actions: %q is not one of %s", i, a, actionNames())
			}
		}
	}
	return gs, nil
}

// Authorize reports whether principal may take action on consumer of
// stream (consumer "" for Publish).
func (a *Authenticator) Authorize(principal string, action Action, stream, consumer string) error {
	for _, g := range a.grants {
		if g.Principal != principal || !matches(g.Stream, stream) || !slices.Contains(g.Actions, action) {
			continue
		}
		if action == ActionPublish || slices.ContainsFunc(g.Consumers, func(c string) bool { return matches(c, consumer) }) {
			return nil
		}
	}
	what := fmt.Sprintf("consumer %q of stream %q", consumer, stream)
	if action == ActionPublish {
		what = fmt.Sprintf("stream %q", stream)
	}
	return fmt.Errorf("%w: %s may not %s on %s", ErrPermissionDenied, principal, action, what)
}

// matches reports whether name matches a grant's glob pattern (path.Match:
// "*", "team-a-*", "billing"); checkGrants refused malformed ones.
func matches(pattern, name string) bool {
	ok, _ := path.Match(pattern, name)
	return ok
}

// actionNames lists the actions for an error message.
func actionNames() string {
	names := make([]string, len(Actions))
	for i, a := range Actions {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}
