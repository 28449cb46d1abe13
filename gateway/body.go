package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

// admitBody admits a request's body before anything decodes it. A POST, PUT or
// PATCH whose Content-Type is not JSON is answered 415, body or no body: a
// web page can send a cross-origin request without a CORS preflight only as
// a "simple" one (text/plain, a form, or no Content-Type at all), and
// refusing those keeps any page a browser opens from settling, fetching or
// publishing through jetgate. A body larger than limit is answered 413; one
// within it is read whole (requestBody). Requests that carry no body (GET)
// pass.
func admitBody(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch:
			if cts := r.Header.Values("Content-Type"); len(cts) != 1 || !isJSON(cts[0]) {
				unsupportedMediaType(w, cts)
				return
			}
		}
		if r.ContentLength > limit {
			tooLarge(w, limit)
			return
		}
		if r.Body != nil && r.Body != http.NoBody {
			b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
			if err != nil {
				writeStatus(w, http.StatusBadRequest, status.New(codes.InvalidArgument, "could not read the request body"), "BODY_UNREADABLE")
				return
			}
			if int64(len(b)) > limit {
				tooLarge(w, limit)
				return
			}
			r.Body = newRequestBody(b)
		}
		next.ServeHTTP(w, r)
	})
}

// isJSON reports whether a Content-Type is JSON: application/json or
// application/*+json, in UTF-8 (the only encoding protobuf's JSON reads:
// charset absent or utf-8).
func isJSON(contentType string) bool {
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return false
	}
	sub, ok := strings.CutPrefix(mt, "application/")
	return ok && (sub == "json" || (strings.HasSuffix(sub, "+json") && len(sub) > len("+json")))
}

func unsupportedMediaType(w http.ResponseWriter, got []string) {
	var what string
	switch len(got) {
	case 0:
		what = "the request has no Content-Type"
	case 1:
		what = fmt.Sprintf("Content-Type %q is not JSON in UTF-8", cut(got[0], 64))
	default:
		what = fmt.Sprintf("the request has %d Content-Type headers", len(got))
	}
	w.Header().Set("Accept", "application/json")
	st := status.New(codes.InvalidArgument, what+"; send the body as JSON with Content-Type: application/json")
	writeStatus(w, http.StatusUnsupportedMediaType, st, "UNSUPPORTED_MEDIA_TYPE")
}

func tooLarge(w http.ResponseWriter, limit int64) {
	st := status.Newf(codes.InvalidArgument, "the request body is larger than %d bytes, the gateway's limits.max_body_bytes (--max-body-bytes)", limit)
	writeStatus(w, http.StatusRequestEntityTooLarge, st, "BODY_TOO_LARGE")
}
