package push

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
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

// request is the push of d, built for format.
func (p *Pusher) request(ctx context.Context, d *consumer.Delivery, now time.Time) (*http.Request, error) {
	h := make(http.Header, len(d.Header)+12)
	body := d.Data
	switch p.cfg.Format {
	case FormatJSON:
		var err error
		if body, err = jsonBody(d); err != nil {
			return nil, err
		}
		h.Set("Content-Type", "application/json")
	case FormatCloudEvents:
		copyHeaders(h, d)
		cloudEvent(h, d)
	default:
		copyHeaders(h, d)
	}
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/octet-stream")
	}
	metadata(h, d)
	id, ts := WebhookID(d), strconv.FormatInt(now.Unix(), 10)
	h.Set("Webhook-Id", id)
	h.Set("Webhook-Timestamp", ts)
	if p.secrets.signingKey != nil {
		h.Set("Webhook-Signature", Sign(p.secrets.signingKey, id, ts, body))
	}
	if p.secrets.bearer != "" {
		h.Set("Authorization", "Bearer "+p.secrets.bearer)
	}
	h.Set("User-Agent", "jetgate-push")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = h
	return req, nil
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
// those dropped or reserved and those HTTP cannot carry.
func copyHeaders(h http.Header, d *consumer.Delivery) {
	for k, vs := range d.Header {
		name := textproto.CanonicalMIMEHeaderKey(k)
		if dropped[name] || reserved(name) || !httpguts.ValidHeaderFieldName(name) {
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
func metadata(h http.Header, d *consumer.Delivery) {
	h.Set("Jetgate-Stream", d.Meta.Stream)
	h.Set("Jetgate-Consumer", d.Meta.Consumer)
	if httpguts.ValidHeaderFieldValue(d.Subject) {
		h.Set("Jetgate-Subject", d.Subject)
	}
	h.Set("Jetgate-Stream-Seq", strconv.FormatUint(d.Meta.StreamSeq, 10))
	h.Set("Jetgate-Delivered", strconv.FormatUint(d.Meta.Delivered, 10))
	h.Set("Jetgate-Published", d.Meta.Timestamp.UTC().Format(time.RFC3339Nano))
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
	return json.Marshal(fields)
}
