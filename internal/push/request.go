package push

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"hash"
	"io"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/wire"
)

// dropped are the message headers that do not go as HTTP headers: hop by
// hop and framing ones, those jetgate sets itself, and credentials.
var dropped = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Transfer-Encoding": true,
	"Upgrade": true, "Te": true, "Trailer": true, "Content-Length": true, "Host": true,
	"Proxy-Authorization": true, "Proxy-Authenticate": true, "Authorization": true, "Cookie": true,
	"Expect": true, "Webhook-Id": true, "Webhook-Timestamp": true, "Webhook-Signature": true,
	"User-Agent": true,
}

// reserved header prefixes, set by jetgate alone.
func reserved(name string) bool {
	return strings.HasPrefix(name, "Jetgate-") || strings.HasPrefix(name, "Ce-")
}

// WebhookID is the id of every push of a message: the same on each of its
// deliveries, so that a receiver can deduplicate.
func WebhookID(d *consumer.Delivery) string {
	return d.Meta.Stream + "." + strconv.FormatUint(d.Meta.StreamSeq, 10)
}

// template is what every request of a pusher shares, made once: the URL
// parsed, the secrets' header values, and a pool of HMAC states.
type template struct {
	url     *url.URL
	host    string   // the URL's, less an empty port, as http.NewRequest has it
	auth    []string // Authorization, or nil
	sigKey  []byte   // nil: no signature
	macs    sync.Pool
	fixedCT []string // Content-Type of the json format
}

// headerValues is how many fixed header values a request may set: the
// metadata, the Standard Webhooks headers, Authorization, User-Agent and
// Content-Type.
const headerValues = 12

var (
	userAgent   = []string{"jetgate-push"}
	octetStream = []string{"application/octet-stream"}
)

func newTemplate(rawURL string, s secrets) (*template, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	t := &template{url: u, host: strings.TrimSuffix(u.Host, ":"), sigKey: s.signingKey, fixedCT: []string{"application/json"}}
	if s.bearer != "" {
		t.auth = []string{"Bearer " + s.bearer}
	}
	if t.sigKey != nil {
		t.macs.New = func() any { return hmac.New(sha256.New, t.sigKey) }
	}
	return t, nil
}

// request is the push of d, built for format. Its header is written
// straight into the map under canonical names, its fixed values shared,
// the rest in one slice; the URL is parsed once, in New.
func (p *Pusher) request(ctx context.Context, d *consumer.Delivery, now time.Time) (*http.Request, error) {
	t := p.tmpl
	h := make(http.Header, len(d.Header)+headerValues)
	w := headerWriter{h: h, vals: make([]string, 0, headerValues)}
	body := d.Data
	switch p.cfg.Format {
	case FormatJSON:
		var err error
		if body, err = jsonBody(d); err != nil {
			return nil, err
		}
		h["Content-Type"] = t.fixedCT
	case FormatCloudEvents:
		copyHeaders(h, d)
		cloudEvent(h, d)
	default:
		copyHeaders(h, d)
	}
	if len(h["Content-Type"]) == 0 || h["Content-Type"][0] == "" {
		h["Content-Type"] = octetStream
	}
	metadata(&w, d)
	return t.signed(ctx, &w, WebhookID(d), now, body), nil
}

// signed is the request of body with the Standard Webhooks headers (id,
// timestamp, and with a secret the signature), the endpoint's credentials
// and jetgate's user agent.
func (t *template) signed(ctx context.Context, w *headerWriter, id string, now time.Time, body []byte) *http.Request {
	ts := strconv.FormatInt(now.Unix(), 10)
	w.set("Webhook-Id", id)
	w.set("Webhook-Timestamp", ts)
	if t.sigKey != nil {
		w.set("Webhook-Signature", t.sign(id, ts, body))
	}
	if t.auth != nil {
		w.h["Authorization"] = t.auth
	}
	w.h["User-Agent"] = userAgent
	return t.post(ctx, w.h, body)
}

// post is the POST of body with header h to the endpoint.
func (t *template) post(ctx context.Context, h http.Header, body []byte) *http.Request {
	u := *t.url
	req := (&http.Request{
		Method: http.MethodPost, URL: &u, Host: t.host, Header: h,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
		GetBody: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil },
	}).WithContext(ctx)
	if len(body) == 0 {
		req.Body, req.GetBody = http.NoBody, func() (io.ReadCloser, error) { return http.NoBody, nil }
	}
	return req
}

// headerWriter sets one value a name, the values sharing one array.
type headerWriter struct {
	h    http.Header
	vals []string
}

// set sets name, canonical already, to v.
func (w *headerWriter) set(name, v string) {
	w.vals = append(w.vals, v)
	n := len(w.vals)
	w.h[name] = w.vals[n-1 : n : n]
}

// sign is Sign with a pooled HMAC state.
func (t *template) sign(id, timestamp string, body []byte) string {
	mac := t.macs.Get().(hash.Hash)
	defer t.macs.Put(mac)
	mac.Reset()
	var buf [128]byte
	head := append(append(append(append(buf[:0], id...), '.'), timestamp...), '.')
	mac.Write(head)
	mac.Write(body)
	var sum [sha256.Size]byte
	out := make([]byte, 3, 3+base64.StdEncoding.EncodedLen(sha256.Size))
	copy(out, "v1,")
	return string(base64.StdEncoding.AppendEncode(out, mac.Sum(sum[:0])))
}

// Sign is the Standard Webhooks signature of a request: v1, and the
// base64 HMAC-SHA256 of id.timestamp.body under key.
func Sign(key []byte, id, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// copyHeaders passes the message's headers on, every value of each, but
// those dropped or reserved and those HTTP cannot carry. A name is checked
// with "_" read as "-", as CGI and many proxies read it: "Jetgate_Stream"
// would pass for jetgate's own header there.
func copyHeaders(h http.Header, d *consumer.Delivery) {
	for k, vs := range d.Header {
		name := textproto.CanonicalMIMEHeaderKey(k)
		if as := textproto.CanonicalMIMEHeaderKey(strings.ReplaceAll(k, "_", "-")); dropped[as] || reserved(as) || !httpguts.ValidHeaderFieldName(name) {
			continue
		}
		for _, v := range vs {
			if httpguts.ValidHeaderFieldValue(v) {
				h.Add(name, v)
			}
		}
	}
}

// metadata sets the Jetgate-* headers: where the message is from.
func metadata(w *headerWriter, d *consumer.Delivery) {
	w.set("Jetgate-Stream", d.Meta.Stream)
	w.set("Jetgate-Consumer", d.Meta.Consumer)
	if httpguts.ValidHeaderFieldValue(d.Subject) {
		w.set("Jetgate-Subject", d.Subject)
	}
	w.set("Jetgate-Stream-Seq", strconv.FormatUint(d.Meta.StreamSeq, 10))
	w.set("Jetgate-Delivered", strconv.FormatUint(d.Meta.Delivered, 10))
	w.set("Jetgate-Published", d.Meta.Timestamp.UTC().Format(time.RFC3339Nano))
}

// cloudEvent sets the CloudEvents attributes of binary content mode. Those
// the publisher gave as ce-* headers of the message stand.
func cloudEvent(h http.Header, d *consumer.Delivery) {
	for k, vs := range d.Header {
		name := textproto.CanonicalMIMEHeaderKey(k)
		if strings.HasPrefix(name, "Ce-") && httpguts.ValidHeaderFieldName(name) && len(vs) > 0 && httpguts.ValidHeaderFieldValue(vs[0]) {
			h.Set(name, vs[0])
		}
	}
	attr := func(name, def string) {
		if h.Get(name) == "" {
			h.Set(name, def)
		}
	}
	attr("Ce-Specversion", "1.0")
	attr("Ce-Id", WebhookID(d))
	attr("Ce-Source", "/jetgate/streams/"+d.Meta.Stream)
	attr("Ce-Type", "io.jetgate.message")
	attr("Ce-Time", d.Meta.Timestamp.UTC().Format(time.RFC3339Nano))
	if httpguts.ValidHeaderFieldValue(d.Subject) {
		attr("Ce-Subject", d.Subject)
	}
}

// restJSON is how a Fetch over REST writes a message.
var restJSON = protojson.MarshalOptions{EmitUnpopulated: true}

// jsonBody is the Message as a Fetch over REST returns it, less its token
// and lease.
func jsonBody(d *consumer.Delivery) ([]byte, error) {
	fields, err := jsonFields(d)
	if err != nil {
		return nil, err
	}
	return json.Marshal(fields)
}

// jsonFields are the fields of jsonBody.
func jsonFields(d *consumer.Delivery) (map[string]json.RawMessage, error) {
	b, err := restJSON.Marshal(wire.Messages([]*consumer.Delivery{d})[0])
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	delete(fields, "token")
	delete(fields, "leaseDeadline")
	return fields, nil
}
