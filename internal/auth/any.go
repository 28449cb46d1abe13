package auth

import (
	"fmt"
	"slices"
)

// AuthorizeAny reports whether principal may take action on some consumer
// of stream, or of any stream when stream is "": what a listing needs
// before it shows the consumers the principal may see one by one (with
// Authorize).
func (a *Authenticator) AuthorizeAny(principal string, action Action, stream string) error {
	for _, g := range a.grants {
		if g.Principal == principal && (stream == "" || matches(g.Stream, stream)) && slices.Contains(g.Actions, action) {
			return nil
		}
	}
	what := fmt.Sprintf("any consumer of stream %q", stream)
	if stream == "" {
		what = "any stream"
	}
	return fmt.Errorf("%w: %s may not %s on %s", ErrPermissionDenied, principal, action, what)
}
