package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/timestamppb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// marshaler is the REST face's JSON: protojson's (runtime.JSONPb), except
// for the one response that carries bulk. A Fetch response is most of what
// REST sends, and protojson, walking it by reflection, was a fifth of the
// REST path's CPU; it is written here directly, in exactly the form protojson
// gives it (EmitUnpopulated), which TestFetchResponseJSONIsProtojsons checks.
// Anything the direct form does not cover (a message with its raw form, a
// string that is not UTF-8, which protojson refuses) goes to protojson.
type marshaler struct {
	runtime.JSONPb
}

func newMarshaler() *marshaler {
	return &marshaler{runtime.JSONPb{
		MarshalOptions:   protojson.MarshalOptions{EmitUnpopulated: true},
		UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: false},
	}}
}

func (m *marshaler) Marshal(v any) ([]byte, error) {
	if r, ok := v.(*jetgatev1.FetchResponse); ok {
		if b, ok := appendFetchResponse(make([]byte, 0, fetchResponseSize(r)), r); ok {
			return b, nil
		}
	}
	b, err := m.JSONPb.Marshal(v)
	if err != nil {
		return nil, err
	}
	return compact(b), nil
}

// compact takes out the spaces protojson puts in its output at random (so
// that no one depends on its form): the same answer reads the same from
// every build, as the README shows it.
func compact(b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b))
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// fetchResponseSize is about the length of r's JSON, to allocate once.
func fetchResponseSize(r *jetgatev1.FetchResponse) int {
	n := 64
	for _, m := range r.GetMessages() {
		n += 400 + len(m.GetToken()) + len(m.GetSubject()) + base64.StdEncoding.EncodedLen(len(m.GetData()))
		for k, hv := range m.GetHeaders() {
			n += len(k) + 16
			for _, v := range hv.GetValues() {
				n += len(v) + 4
			}
		}
	}
	return n
}

// appendFetchResponse appends r as protojson writes it; ok is false if a
// string in it is not valid UTF-8.
func appendFetchResponse(b []byte, r *jetgatev1.FetchResponse) (_ []byte, ok bool) {
	b = append(b, `{"messages":[`...)
	for i, m := range r.GetMessages() {
		if i > 0 {
			b = append(b, ',')
		}
		if b, ok = appendMessage(b, m); !ok {
			return nil, false
		}
	}
	b = append(b, `],"emptyReason":`...)
	b = strconv.AppendQuote(b, r.GetEmptyReason().String())
	b = append(b, `,"pinId":`...)
	if b, ok = appendString(b, r.GetPinId()); !ok {
		return nil, false
	}
	return append(b, '}'), true
}

func appendMessage(b []byte, m *jetgatev1.Message) (_ []byte, ok bool) {
	if m.Raw != nil {
		return nil, false // rare: protojson writes it
	}
	b = append(b, `{"token":`...)
	if b, ok = appendString(b, m.GetToken()); !ok {
		return nil, false
	}
	b = append(b, `,"subject":`...)
	if b, ok = appendString(b, m.GetSubject()); !ok {
		return nil, false
	}
	b = append(b, `,"data":"`...)
	b = base64.StdEncoding.AppendEncode(b, m.GetData())
	b = append(b, `","headers":{`...)
	hs := m.GetHeaders()
	keys := make([]string, 0, len(hs))
	for k := range hs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		if b, ok = appendString(b, k); !ok {
			return nil, false
		}
		b = append(b, `:{"values":[`...)
		for j, v := range hs[k].GetValues() {
			if j > 0 {
				b = append(b, ',')
			}
			if b, ok = appendString(b, v); !ok {
				return nil, false
			}
		}
		b = append(b, "]}"...)
	}
	b = append(b, `},"leaseDeadline":`...)
	b = appendTimestamp(b, m.GetLeaseDeadline())
	b = append(b, `,"metadata":`...)
	md := m.GetMetadata()
	if md == nil {
		return append(b, "null}"...), true
	}
	b = append(b, `{"stream":`...)
	if b, ok = appendString(b, md.GetStream()); !ok {
		return nil, false
	}
	b = append(b, `,"consumer":`...)
	if b, ok = appendString(b, md.GetConsumer()); !ok {
		return nil, false
	}
	for _, f := range [...]struct {
		name string
		v    uint64
	}{{"streamSeq", md.GetStreamSeq()}, {"consumerSeq", md.GetConsumerSeq()},
		{"numDelivered", md.GetNumDelivered()}, {"numPending", md.GetNumPending()}} {
		b = append(b, `,"`...)
		b = append(b, f.name...)
		b = append(b, `":"`...) // protojson quotes 64-bit integers
		b = strconv.AppendUint(b, f.v, 10)
		b = append(b, '"')
	}
	b = append(b, `,"timestamp":`...)
	b = appendTimestamp(b, md.GetTimestamp())
	return append(b, "}}"...), true
}

// appendString appends s as a JSON string, escaped as protojson does;
// ok is false if s is not valid UTF-8.
func appendString(b []byte, s string) (_ []byte, ok bool) {
	if !utf8.ValidString(s) {
		return nil, false
	}
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"'), true
}

// appendTimestamp appends ts as protojson does: RFC 3339 in UTC with 0, 3,
// 6 or 9 fractional digits, or null when unset.
func appendTimestamp(b []byte, ts *timestamppb.Timestamp) []byte {
	if ts == nil {
		return append(b, "null"...)
	}
	t := time.Unix(ts.GetSeconds(), int64(ts.GetNanos())).UTC()
	b = append(b, '"')
	start := len(b)
	b = t.AppendFormat(b, "2006-01-02T15:04:05.000000000")
	frac := b[start+len("2006-01-02T15:04:05"):]
	switch {
	case string(frac) == ".000000000":
		b = b[:len(b)-10]
	case string(frac[4:]) == "000000":
		b = b[:len(b)-6]
	case string(frac[7:]) == "000":
		b = b[:len(b)-3]
	}
	return append(b, 'Z', '"')
}
