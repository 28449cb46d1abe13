package gateway

import (
	"errors"
	"strings"
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

// protojson counts a column in runes: read as bytes, a hint went wrong
// after non-ASCII text, and a headers object closed with a space between its
// braces was taken for still open.
func TestAHintReadsProtojsonsColumnInRunes(t *testing.T) {
	m := newMarshaler()
	tests := []struct {
		name, body string
		want       bool // the headers hint is right here
	}{
		// The error is at 5, after the headers object closed: no headers
		// hint is due. The rune column falls inside the headers.
		{"headers fine, error after them", `{"headers":{"X-Name":{"values":["ééééééééééééééééééééé"]}},"subject":5}`, false},
		// The error is the header written as a string: the hint is due.
		// The rune column falls before "headers".
		// ASCII alone: the headers object closed with a space between its
		// braces (as a formatter writes it); "}}" is not there.
		{"headers fine and spaced, error after them", "{\"headers\": {\"X-A\": {\"values\": [\"b\"]} },\n \"subject\": 5}", false},
		{"a header as a string after a non-ASCII subject", `{"subject":"ordres.` + strings.Repeat("é", 40) + `","headers":{"X-A":"b"}}`, true},
	}
	for _, tt := range tests {
		err := m.unmarshal([]byte(tt.body), &jetgatev1.PublishRequest{})
		if err == nil {
			t.Fatalf("%s: no error", tt.name)
		}
		got := strings.Contains(err.Error(), "headers map each name to")
		if got != tt.want {
			t.Errorf("%s: headers hint given %v, want %v: %v", tt.name, got, tt.want, err)
		}
	}
}

// hint on any body, through the path REST takes (no panic).
func FuzzHint(f *testing.F) {
	for _, s := range []string{`{"subject":"x","headers":{"X":"b"}}`, "{\"headers\":\n{\"é\":[1]}}", `{"data":"hello"}`, `{"headers":{}} x`, `{"ttl":"1m","headers":{"a":{"values":[5]}}}`} {
		f.Add([]byte(s))
	}
	m := newMarshaler()
	f.Fuzz(func(t *testing.T, body []byte) {
		_ = m.unmarshal(body, &jetgatev1.PublishRequest{})
		_ = m.unmarshal(body, &jetgatev1.PublishBatchRequest{})
		_ = hint(body, string(body)) // what carrying any "(line n:m)"
	})
}
