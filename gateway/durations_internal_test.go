package gateway

import (
	"errors"
	"testing"
	"time"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

func TestGoDurationsRewritesInPlace(t *testing.T) {
	md := (&jetgatev1.PublishBatchRequest{}).ProtoReflect().Descriptor()
	tests := []struct{ in, want string }{
		{`{"messages":[{"ttl":"1m"},{"ttl": "1.5s"} , {"ttl" :"1h30m", "subject":"a"}]}`,
			`{"messages":[{"ttl":"60s"},{"ttl": "1.5s"} , {"ttl" :"5400s", "subject":"a"}]}`},
		{`{"messages":[{"ttl":"250ms","headers":{"ttl":{"values":["1m"]}}}]}`,
			`{"messages":[{"ttl":"0.25s","headers":{"ttl":{"values":["1m"]}}}]}`},
		{`{"unknown":{"ttl":"1m"},"messages":null}`, `{"unknown":{"ttl":"1m"},"messages":null}`},
		{`{"messages":[{"ttl":"1\u006d"}]}`, `{"messages":[{"ttl":"60s"}]}`},
		{`{"messages":[{"ttl":`, `{"messages":[{"ttl":`},
	}
	for _, tt := range tests {
		got, _, err := goDurations(md, []byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("goDurations(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	if _, _, err := goDurations(md, []byte(`{"messages":[{},{"ttl":"x"}]}`)); !errors.Is(err, errBadDuration) {
		t.Errorf("a bad duration: %v; want errBadDuration", err)
	}
}

func TestProtoForm(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 500 * time.Millisecond: "0.5s", time.Nanosecond: "0.000000001s",
		90 * time.Minute: "5400s", -1500 * time.Millisecond: "-1.5s",
	} {
		if got := protoForm(d); got != want {
			t.Errorf("protoForm(%v) = %s; want %s", d, got, want)
		}
	}
}

// protojson puts spaces in its output at random, by build: an answer reads
// the same from every build once compact takes them out, and a string's
// own spaces stay.
func TestCompactTakesOutProtojsonsSpaces(t *testing.T) {
	got := string(compact([]byte(`{"stream":"ORDERS", "seq":"8",  "note":"a, b: c", "list":[1, 2]}`)))
	if want := `{"stream":"ORDERS","seq":"8","note":"a, b: c","list":[1,2]}`; got != want {
		t.Fatalf("compact = %s; want %s", got, want)
	}
}
