package server_test

import (
	"strings"
	"testing"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// A configuration over the NATS server's max_payload (a 1.5 MB description)
// was answered UNAVAILABLE "retry", which no retry mends: it is the
// caller's to fix.
func TestAConsumerOverMaxPayloadIsTheCallersToFix(t *testing.T) {
	big := strings.Repeat("x", 1500<<10)
	refusedAsTheCallers(t, "a description over max_payload", func(name string) *jetgatev1.ConsumerConfig {
		return &jetgatev1.ConsumerConfig{DurableName: name, Description: big}
	}, "description")
}
