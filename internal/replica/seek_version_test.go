package replica

import "testing"

// Seek needs the consumer reset API of nats-server 2.14: the connected
// server's version decides, before anything is sent.
func TestSeekNeedsServer214(t *testing.T) {
	for v, want := range map[string]bool{
		"2.14.0": true, "2.14.0-beta.1": true, "2.15.2": true, "3.0.0": true,
		"2.13.9": false, "2.11.4": false, "1.99.0": false, "": false, "garbage": false, "2": false,
	} {
		if got := versionAtLeast(v, seekMinServer); got != want {
			t.Errorf("versionAtLeast(%q, 2.14) = %v; want %v", v, got, want)
		}
	}
}
