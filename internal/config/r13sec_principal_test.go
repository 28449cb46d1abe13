package config

import (
	"strings"
	"testing"
)

// An API key's principal longer than any settle carries is refused by
// check-config and at start, naming its line, as the gateway would refuse
// its every call.
func TestAnAPIKeysPrincipalTooLongIsRefused(t *testing.T) {
	text := good + "auth: {api_keys: [{principal: " + strings.Repeat("p", 1025) + ", sha256: " + strings.Repeat("ab", 32) + "}]}\n"
	_, err := parseAndValidate("bad.yaml", text)
	wantError(t, err, "auth.api_keys[0].principal", 14, "1025 bytes; at most 1024")
}
