// Package natsname is the one rule for the names of streams and consumers
// that jetgate accepts, in requests and in its configuration alike.
package natsname

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxLen bounds stream and consumer names, as the NATS server does.
const MaxLen = 255

// Check reports whether name is a valid stream or consumer name. field names
// it in the error ("stream", "--consumer", …).
func Check(field, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s is required", field)
	case len(name) > MaxLen:
		return fmt.Errorf("%s is longer than %d bytes", field, MaxLen)
	case strings.ContainsAny(name, ".*> /\\") || strings.ContainsFunc(name, unicode.IsControl) || !utf8.ValidString(name):
		return fmt.Errorf("%s %q is not a valid NATS name (no dots, wildcards, slashes or spaces)", field, name)
	}
	return nil
}
