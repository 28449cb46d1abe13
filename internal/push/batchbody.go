package push

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"mime"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/wire"
)

// Content types of a batch body.
var (
	batchJSON        = []string{"application/json"}
	batchCloudEvents = []string{"application/cloudevents-batch+json"}
)

// element is d as an element of a batch body, "id" its Webhook-Id: with
// cloudevents a structured-mode event, else the json form.
func element(f Format, d *consumer.Delivery) ([]byte, error) {
	if f == FormatCloudEvents {
		return structuredEvent(d)
	}
	return jsonElement(d)
}

// jsonElement is d's json form, "id" first: the members of the Message
// protojson writes, but token and leaseDeadline, copied as they are rather
// than decoded and encoded again.
func jsonElement(d *consumer.Delivery) ([]byte, error) {
	m, err := restJSON.Marshal(wire.Messages([]*consumer.Delivery{d})[0])
	if err != nil {
		return nil, err
	}
	id, _ := json.Marshal(WebhookID(d))
	out := make([]byte, 0, len(m)+len(id)+8)
	out = append(append(out, `{"id":`...), id...)
	if out, err = appendMembers(out, m, func(key []byte) bool {
		return string(key) == "token" || string(key) == "leaseDeadline"
	}); err != nil {
		return nil, err
	}
	return append(out, '}'), nil
}

var errJSON = errors.New("protojson wrote no JSON object")

// appendMembers appends to dst, each after a comma, the members of the JSON
// object obj but those drop names.
func appendMembers(dst, obj []byte, drop func(key []byte) bool) ([]byte, error) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, errJSON
	}
	for i++; ; {
		i = skipSpace(obj, i)
		if i < len(obj) && obj[i] == '}' {
			return dst, nil
		}
		start := i
		end, err := stringEnd(obj, i)
		if err != nil {
			return nil, err
		}
		key := obj[start+1 : end-1]
		if i = skipSpace(obj, end); i >= len(obj) || obj[i] != ':' {
			return nil, errJSON
		}
		if i, err = valueEnd(obj, skipSpace(obj, i+1)); err != nil {
			return nil, err
		}
		if !drop(key) {
			dst = append(append(dst, ','), obj[start:i]...)
		}
		switch i = skipSpace(obj, i); {
		case i < len(obj) && obj[i] == ',':
			i++
		case i < len(obj) && obj[i] == '}':
			return dst, nil
		default:
			return nil, errJSON
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index after the JSON string that starts at i.
func stringEnd(b []byte, i int) (int, error) {
	if i >= len(b) || b[i] != '"' {
		return 0, errJSON
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, errJSON
}

// valueEnd is the index after the JSON value that starts at i.
func valueEnd(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errJSON
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end, err := stringEnd(b, i)
				if err != nil {
					return 0, err
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1, nil
				}
			}
		}
		return 0, errJSON
	}
	for ; i < len(b); i++ { // a number, true, false or null
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i, nil
		}
	}
	return i, nil
}

// estimate is about the size of d's element before it is rendered: its
// data in base64, its subject and headers, and the metadata.
func estimate(d *consumer.Delivery) int64 {
	n := len(d.Subject)
	for k, vs := range d.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 8
		}
	}
	return int64((len(d.Data)+2)/3*4 + 2*n + 320)
}

// structuredEvent is d as a CloudEvent in structured mode (JSON event
// format). The ce-* headers the publisher set stand as attributes but id,
// which is the Webhook-Id, so that an answer's failures name the message;
// jetgate's metadata and the message's trace context go as extension
// attributes.
func structuredEvent(d *consumer.Delivery) ([]byte, error) {
	ev := map[string]any{}
	for k, vs := range d.Header {
		name, ok := strings.CutPrefix(strings.ToLower(textproto.CanonicalMIMEHeaderKey(k)), "ce-")
		if ok && len(vs) > 0 && ceAttribute(name) {
			ev[name] = vs[0]
		}
	}
	attr := func(name string, def any) {
		if _, ok := ev[name]; !ok {
			ev[name] = def
		}
	}
	ev["id"] = WebhookID(d)
	attr("specversion", "1.0")
	attr("source", "/jetgate/streams/"+d.Meta.Stream)
	attr("type", "io.jetgate.message")
	attr("time", d.Meta.Timestamp.UTC().Format(time.RFC3339Nano))
	if d.Subject != "" {
		attr("subject", d.Subject)
	}
	// The distributed tracing extension: the message's trace context, for
	// a receiver to continue each event's trace (the request's traceparent
	// header is the batch's).
	for _, k := range []string{"traceparent", "tracestate"} {
		if v := headerValue(d, k); v != "" {
			attr(k, v)
		}
	}
	if ct := headerValue(d, "Content-Type"); ct != "" {
		ev["datacontenttype"] = ct
	}
	ev["jetgatestream"] = d.Meta.Stream
	ev["jetgateconsumer"] = d.Meta.Consumer
	// Strings: a CloudEvents Integer is 32 bits, a sequence 64.
	ev["jetgatestreamseq"] = strconv.FormatUint(d.Meta.StreamSeq, 10)
	ev["jetgatedelivered"] = strconv.FormatUint(d.Meta.Delivered, 10)
	switch ct, _ := ev["datacontenttype"].(string); {
	case len(d.Data) == 0:
	case jsonType(ct) && json.Valid(d.Data):
		ev["data"] = json.RawMessage(d.Data)
	default:
		ev["data_base64"] = d.Data // []byte: base64
	}
	return json.Marshal(ev)
}

// ceAttribute reports whether a ce-* header names an attribute a publisher
// may set: lower-case letters and digits, not the data's nor id.
func ceAttribute(name string) bool {
	if name == "" || name == "id" || name == "data" || name == "data_base64" {
		return false
	}
	for _, c := range name {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// jsonType reports whether a media type is JSON: application/json or
// anything +json.
func jsonType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// headerValue is d's first value of the header name, in any case.
func headerValue(d *consumer.Delivery, name string) string {
	if vs := d.Header[name]; len(vs) > 0 {
		return vs[0]
	}
	for k, vs := range d.Header {
		if strings.EqualFold(k, name) && len(vs) > 0 {
			return vs[0]
		}
	}
	return ""
}

// batchBody is the JSON array of the jobs' elements.
func batchBody(js []*job) []byte {
	n := 1 + len(js)
	for _, j := range js {
		n += len(j.elem)
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for i, j := range js {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, j.elem...)
	}
	return append(b, ']')
}

// batchID is a batch's Webhook-Id: <stream>.<first seq>-<last seq>.<hash>,
// the hash the first 8 bytes of SHA-256 of its elements' ids joined by
// commas, in hex. The same messages in the same order have the same id;
// no other batch has it.
func batchID(js []*job) string {
	h := sha256.New()
	for i, j := range js {
		if i > 0 {
			h.Write([]byte{','})
		}
		h.Write([]byte(WebhookID(j.d)))
	}
	first, last := js[0].d.Meta, js[len(js)-1].d.Meta
	return first.Stream + "." + strconv.FormatUint(first.StreamSeq, 10) + "-" + strconv.FormatUint(last.StreamSeq, 10) +
		"." + hex.EncodeToString(h.Sum(nil)[:8])
}
