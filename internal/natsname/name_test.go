package natsname

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, ok := range []string{"ORDERS", "billing", "a-b_c", "x~1", strings.Repeat("n", MaxLen), "ünï"} {
		if err := Check("stream", ok); err != nil {
			t.Errorf("Check(%q) = %v, want ok", ok, err)
		}
	}
	for _, bad := range []string{"", "a.b", "a*", "a>", "a b", "a/b", `a\b`, "a\x00", "a\tb", "\xff", strings.Repeat("n", MaxLen+1)} {
		err := Check("--consumer", bad)
		if err == nil {
			t.Errorf("Check(%q) = nil, want an error", bad)
			continue
		}
		if !strings.HasPrefix(err.Error(), "--consumer") {
			t.Errorf("Check(%q) = %q, want it to name the field", bad, err)
		}
	}
}
