package wire

import (
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// replacement stands for each byte of a subject or header that is not
// UTF-8: protobuf strings and JSON must be UTF-8, and one such message must
// not fail the batch it is in.
const replacement = "\uFFFD"

// setInvalid sets m's subject and headers from a subject or headers that
// are not all UTF-8: each invalid byte replaced in subject and headers, and
// the exact bytes of both in raw.
func setInvalid(m *jetgatev1.Message, subject string, h nats.Header) {
	m.Subject = ValidUTF8(subject)
	raw := &jetgatev1.RawMessage{Subject: []byte(subject), Headers: make([]*jetgatev1.RawHeader, 0, len(h))}
	m.Headers = make(map[string]*jetgatev1.HeaderValues, len(h))
	for _, k := range slices.Sorted(maps.Keys(h)) {
		rh := &jetgatev1.RawHeader{Name: []byte(k), Values: make([][]byte, len(h[k]))}
		hv := m.Headers[ValidUTF8(k)]
		if hv == nil {
			hv = &jetgatev1.HeaderValues{}
			m.Headers[ValidUTF8(k)] = hv
		}
		for i, v := range h[k] {
			rh.Values[i] = []byte(v)
			hv.Values = append(hv.Values, ValidUTF8(v))
		}
		raw.Headers = append(raw.Headers, rh)
	}
	m.Raw = raw
}

// ValidUTF8 is s with each byte that is not part of a UTF-8 character
// replaced by U+FFFD (strings.ToValidUTF8 replaces a run of them with one):
// how any string of a message that protobuf cannot carry is shown (a
// message's subject and headers, a dead letter's, an endpoint's answer).
func ValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 2*len(replacement))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString(replacement)
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
