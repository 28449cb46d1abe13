package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/protobuf/proto"
)

// requestBody is a request's body, read whole by admitBody. The decoder
// decodes it in one piece (exact positions in errors, nothing after the
// JSON value ignored) and marks it malformed when it does not decode, so
// that the error handler can answer with the reason MALFORMED_BODY:
// grpc-gateway passes on only the decoder's error text.
type requestBody struct {
	*bytes.Reader
	data      []byte
	malformed bool
}

func newRequestBody(b []byte) *requestBody {
	return &requestBody{Reader: bytes.NewReader(b), data: b}
}

func (*requestBody) Close() error { return nil }

// malformedBody reports whether r's body failed to decode.
func malformedBody(r *http.Request) bool {
	b, ok := r.Body.(*requestBody)
	return ok && b.malformed
}

// NewDecoder decodes a request body read whole by admitBody, with protojson;
// any other reader goes to runtime.JSONPb's decoder.
func (m *marshaler) NewDecoder(r io.Reader) runtime.Decoder {
	body, ok := r.(*requestBody)
	if !ok {
		return m.JSONPb.NewDecoder(r)
	}
	return runtime.DecoderFunc(func(v any) error {
		msg, ok := v.(proto.Message)
		if !ok {
			return m.JSONPb.NewDecoder(body).Decode(v)
		}
		if len(bytes.TrimSpace(body.data)) == 0 {
			return io.EOF // no body: the request's defaults
		}
		if err := m.unmarshal(body.data, msg); err != nil {
			body.malformed = true
			return err
		}
		return nil
	})
}

// unmarshal decodes data into msg with protojson; when that fails, it takes
// Duration fields in Go's form too ("500ms", "1m"), as the configuration file
// does, and names a Duration field that holds neither form.
func (m *marshaler) unmarshal(data []byte, msg proto.Message) error {
	err := m.UnmarshalOptions.Unmarshal(data, msg)
	if err == nil {
		return nil
	}
	name := msg.ProtoReflect().Descriptor().Name()
	fixed, changed, derr := goDurations(msg.ProtoReflect().Descriptor(), data)
	if derr != nil {
		return fmt.Errorf("the request body is not a valid %s: %w", name, derr)
	}
	if !changed {
		return describeMalformed(msg, data, err)
	}
	proto.Reset(msg)
	if err := m.UnmarshalOptions.Unmarshal(fixed, msg); err != nil {
		return describeMalformed(msg, fixed, err)
	}
	return nil
}

// describeMalformed says where a body went wrong and what was expected, in
// protojson's words ("(line 1:10): invalid value for int32 field batch"),
// less its "proto:" prefix (whose space protobuf varies on purpose).
func describeMalformed(msg proto.Message, body []byte, err error) error {
	what := strings.TrimLeft(strings.TrimPrefix(err.Error(), "proto:"), " \u00a0")
	if errors.Is(err, io.ErrUnexpectedEOF) || what == io.ErrUnexpectedEOF.Error() {
		line := 1 + bytes.Count(body, []byte("\n"))
		col := 1 + len(body) - (bytes.LastIndexByte(body, '\n') + 1)
		what = fmt.Sprintf("(line %d:%d): the body ends before its JSON does", line, col)
	}
	return fmt.Errorf("the request body is not a valid %s: %s%s; send one JSON object with the fields of the API (see /openapi.json)",
		msg.ProtoReflect().Descriptor().Name(), what, hint(body, what))
}

// hint says what the API's JSON takes where a body is most often written
// otherwise: bytes in base64, and a message's headers as lists of values.
func hint(body []byte, what string) string {
	if strings.Contains(what, "invalid value for bytes field") {
		return ` (bytes are base64: "aGVsbG8=" is "hello")`
	}
	var line, col int
	i := strings.Index(what, "(line ")
	if i < 0 {
		return ""
	}
	if _, err := fmt.Sscanf(what[i:], "(line %d:%d)", &line, &col); err != nil {
		return ""
	}
	if at, ok := offset(body, line, col); ok && inHeaders(body, at) {
		return ` (headers map each name to {"values": [...]}: {"X-Trace": {"values": ["a"]}})`
	}
	return ""
}

// offset is the byte offset in body of protojson's position: a line, and a
// column counted in runes.
func offset(body []byte, line, col int) (int, bool) {
	at := 0
	for range line - 1 {
		i := bytes.IndexByte(body[at:], '\n')
		if i < 0 {
			return 0, false
		}
		at += i + 1
	}
	for range col - 1 {
		if at >= len(body) {
			return 0, false
		}
		_, n := utf8.DecodeRune(body[at:])
		at += n
	}
	return at, at <= len(body)
}

// inHeaders reports whether offset at of body lies within the value of the
// object's "headers" member: from the key to the brace that closes the
// value, strings skipped.
func inHeaders(body []byte, at int) bool {
	h := bytes.Index(body, []byte(`"headers"`))
	if h < 0 || h >= at {
		return false
	}
	depth, inString := 0, false
	for i := h + len(`"headers"`); i < at; i++ {
		switch c := body[i]; {
		case inString && c == '\\':
			i++
		case c == '"':
			inString = !inString
		case inString:
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth--; depth <= 0 {
				return false // the value ended before the error
			}
		}
	}
	return true
}
