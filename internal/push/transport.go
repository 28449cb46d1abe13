package push

import (
	"crypto/tls"
	"net"
	"net/http"
	"net/url"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/jetgate/jetgate/internal/tracing"
)

// newTransport is the pusher's HTTP transport: connections kept for reuse
// (one idle per worker and the retrier), TLS as configured, HTTP/2 as cfg
// says. The pusher calls its RoundTrip, not an http.Client's Do: a push
// follows no redirect, so the client's redirect handling (a copy of every
// request's header) is of no use; a request's limit is its context's
// deadline (send), as Client.Timeout would set it, less the goroutine and
// timer per request Client.Timeout costs behind otelhttp's transport.
func newTransport(cfg Config, tlsCfg *tls.Config, trc *tracing.Tracing) (*http.Transport, http.RoundTripper) {
	dialer := &net.Dialer{Timeout: min(5*time.Second, cfg.Timeout), KeepAlive: 30 * time.Second}
	t := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       tlsCfg,
		TLSHandshakeTimeout:   min(5*time.Second, cfg.Timeout),
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          cfg.Concurrency + 1,
		MaxIdleConnsPerHost:   cfg.Concurrency + 1,
		// A push waits for a connection a finished one gives back rather
		// than dialing another: the endpoint sees at most one connection
		// per push in flight.
		MaxConnsPerHost:   cfg.Concurrency,
		ForceAttemptHTTP2: true, // h2 where the endpoint's TLS offers it
		Protocols:         protocols(cfg),
	}
	var transport http.RoundTripper = t
	if trc.On() {
		// A CLIENT span per push, child of the message's creation context
		// (send), whose context the request carries; its messaging
		// attributes as the batch span's, and the message's id.
		transport = otelhttp.NewTransport(namesMessage{transport}, otelhttp.WithTracerProvider(trc.Provider),
			otelhttp.WithPropagators(tracing.W3C),
			otelhttp.WithSpanNameFormatter(func(string, *http.Request) string { return "push " + cfg.Stream }),
			otelhttp.WithSpanOptions(trace.WithAttributes(semconv.MessagingSystemKey.String("nats"),
				semconv.MessagingDestinationName(cfg.Stream), semconv.MessagingConsumerGroupName(cfg.Consumer),
				semconv.MessagingOperationName("push"))))
	}
	return t, transport
}

// namesMessage puts a one-message request's Webhook-Id (<stream>.<seq>, as
// the publish span has it) on its span as messaging.message.id; a batch's
// request, whose span is the batch span's child, names none.
type namesMessage struct{ next http.RoundTripper }

func (n namesMessage) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Jetgate-Batch-Size") == "" {
		trace.SpanFromContext(r.Context()).SetAttributes(semconv.MessagingMessageID(r.Header.Get("Webhook-Id")))
	}
	return n.next.RoundTrip(r)
}

// protocols are the HTTP versions the pusher speaks: with http2, HTTP/2
// alone (h2c with prior knowledge over http, h2 over https); without, nil:
// HTTP/1.1, and h2 over TLS where the endpoint offers it.
func protocols(cfg Config) *http.Protocols {
	if !cfg.HTTP2 {
		return nil
	}
	p := new(http.Protocols)
	if u, err := url.Parse(cfg.URL); err == nil && u.Scheme == "https" {
		p.SetHTTP2(true)
	} else {
		p.SetUnencryptedHTTP2(true)
	}
	return p
}
