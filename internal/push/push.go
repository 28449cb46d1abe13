package push

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/tracing"
	"github.com/jetgate/jetgate/internal/wire"
	"go.opentelemetry.io/otel/trace"
)

// maxBody is how much of a response body is read (and discarded), so that
// the connection can be used again.
const maxBody = 64 << 10

// forever bounds how long a lease is extended while its message waits for
// the endpoint: as long as the endpoint is held back.
const forever = 100 * 365 * 24 * time.Hour

// idleWait is how long the pusher's pull waits while it holds nothing, as a
// nats.go client's Consume does: an idle push consumer asks the server
// about twice in that long (DESIGN 13), not every second.
const idleWait = 30 * time.Second

// Pusher pushes one consumer's messages to its endpoint. Run it, then Stop
// it.
type Pusher struct {
	cfg Config
	c   *consumer.Consumer
	// rt sends the requests: the transport, behind otelhttp's while
	// tracing is on.
	rt        http.RoundTripper
	transport *http.Transport
	tmpl      *template // what every request shares
	flow      *flow
	m         boundMetrics
	log       *slog.Logger
	up        *endpointLog
	tracer    trace.Tracer // the batch spans'; nil while tracing is off
	// requests holds a place per batch request in flight, concurrency in
	// all, the retrier's among them (mayGo).
	requests chan struct{}

	stop     chan struct{} // closed by Stop: pull no more, start no push
	stopOnce sync.Once
	ctx      context.Context    // Run's: canceled, the stream ends
	cancel   context.CancelFunc // once what is in flight is done
	workers  sync.WaitGroup
	toAck    chan *consumer.Delivery // to the acker
	acked    chan struct{}           // the acker has sent every Ack it was given
	done     chan struct{}           // Run returned

	pauseMu sync.Mutex // orders the words of a pause (PauseChanged)

	mu        sync.Mutex
	lastErr   string
	lastErrAt time.Time
}

// New makes the pusher of c that cfg (defaults filled) describes; it reads
// the block's files.
func New(cfg Config, c *consumer.Consumer, m *Metrics, log *slog.Logger, trc *tracing.Tracing) (*Pusher, error) {
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("push of %s/%s: %w", cfg.Stream, cfg.Consumer, err)
	}
	s, err := cfg.secrets() // read once, here
	if err != nil {
		return nil, fmt.Errorf("push of %s/%s: %w", cfg.Stream, cfg.Consumer, err)
	}
	tmpl, err := newTemplate(cfg.URL, s)
	if err != nil {
		return nil, fmt.Errorf("push of %s/%s: %w", cfg.Stream, cfg.Consumer, err)
	}
	p := &Pusher{
		cfg: cfg, c: c, tmpl: tmpl,
		flow: newFlow(cfg.RetryMin, cfg.RetryMax), m: m.bind(cfg.Stream, cfg.Consumer),
		log:  log.With("stream", cfg.Stream, "consumer", cfg.Consumer, "push", redact(cfg.URL)),
		stop: make(chan struct{}), done: make(chan struct{}),
		toAck: make(chan *consumer.Delivery, cfg.leases()), acked: make(chan struct{}),
		requests: make(chan struct{}, cfg.Concurrency),
	}
	if cfg.Batch != nil {
		p.flow.batching = true
		p.tracer = trc.Tracer()
	} else {
		p.flow.most = cfg.Concurrency // batches take their places (mayGo)
	}
	p.transport, p.rt = newTransport(cfg, s.tls, trc)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.up = newEndpointLog(p.log, p.m.up)
	p.m.up.Set(1)
	return p, nil
}

// Run pulls and pushes until ctx ends or Stop has drained it.
func (p *Pusher) Run(ctx context.Context) {
	defer close(p.done)
	stop := context.AfterFunc(ctx, p.cancel)
	defer stop()
	defer p.cancel()
	ctx = p.ctx
	p.PauseChanged() // as the server said at the bind
	for range p.cfg.Concurrency {
		p.workers.Add(1)
		go func() {
			defer p.workers.Done()
			// A context of the worker's own: its requests' deadlines hang
			// on it, not all on Run's, whose lock they would share.
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			if b := p.cfg.Batch; b != nil {
				for js := p.flow.nextBatch(b.MaxMessages, b.MaxBytes, b.MaxWait); js != nil; js = p.flow.nextBatch(b.MaxMessages, b.MaxBytes, b.MaxWait) {
					p.pushBatch(ctx, js)
				}
				return
			}
			for j := p.flow.next(); j != nil; j = p.flow.next() {
				p.push(ctx, j)
			}
		}()
	}
	p.workers.Add(1)
	go func() {
		defer p.workers.Done()
		p.retrier(ctx)
	}()
	go p.acks(ctx)
	go func() {
		p.workers.Wait()
		close(p.toAck)
	}()
	p.consume(ctx)
	p.flow.stop()
	<-p.acked
	p.transport.CloseIdleConnections()
}

// consume holds the stream of leases that feeds the flow until ctx ends. It
// outlasts NATS going away: the messages pulled and not pushed yet keep
// their leases (extended once NATS is back), so that an endpoint outage
// costs no deliveries through a NATS blip either. A stream that ends for
// another reason (its consumer deleted) is opened again.
func (p *Pusher) consume(ctx context.Context) {
	req := consumer.ConsumeRequest{
		MaxMessages: p.cfg.leases(), MaxBytes: p.cfg.leaseBytes(p.c.MaxFetchBytes()),
		Heartbeat: time.Hour, AutoExtend: true, MaxLease: forever,
		Principal: "push", Stop: p.stop,
		// A stream that ends without the pusher leaving (its consumer
		// refused) leaves the requests in flight running: their leases are
		// kept alive as long as one may run, not left to lapse and be pushed
		// again meanwhile.
		KeepOnEnd: p.cfg.Timeout,
		Outlast:   true,
		Starved:   p.flow.starved,
		Hungry:    p.flow.hungry,
		IdleWait:  idleWait,
		// A pull NATS failed is made again in silence: counted and shown
		// here, as no caller hears of it.
		Unavailable: func(error) {
			p.m.natsFailed("pull").Inc()
			p.failed("pulling: NATS JetStream did not answer; pulling again") // GetConsumer shows it: no internal text
		},
	}
	const firstWait = 100 * time.Millisecond
	for wait := firstWait; ; wait = min(wait*2, 5*time.Second) {
		started := time.Now()
		err := p.c.Consume(ctx, req, func(ds []*consumer.Delivery) error {
			if len(ds) == 0 {
				return nil
			}
			now := time.Now()
			js := make([]*job, len(ds))
			for i, d := range ds {
				js[i] = &job{d: d, added: now}
				if p.cfg.Batch != nil {
					js[i].size = estimate(d)
				}
			}
			p.flow.add(js...)
			return nil
		})
		if ctx.Err() != nil {
			return
		}
		// The stream let its leases go: what was not pushed yet is the
		// server's again.
		p.flow.drop()
		p.failed(fmt.Sprintf("pulling: %v", err))
		if time.Since(started) > time.Minute {
			wait = firstWait // a stream that ran a while: this is a new outage
		}
		p.log.Warn("the push stream ended; pulling again", "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// Stop stops pulling and starting pushes, lets those in flight finish
// until ctx ends, and then gives back every lease it holds (nak'ed, so
// another replica pushes those messages at once). Run must have been
// started.
func (p *Pusher) Stop(ctx context.Context) {
	p.stopOnce.Do(func() {
		close(p.stop)
		p.flow.stop()
	})
	select {
	case <-p.acked: // the workers are done, and their Acks sent
	case <-ctx.Done():
	case <-p.done:
	}
	p.cancel()
	<-p.done
}

// PauseChanged holds every push while the consumer is paused, as it says
// now (its pause advisory, an info), and lets them go when it is not. The
// consumer is read under pauseMu: a caller that read it earlier cannot
// write its word over a later one's.
func (p *Pusher) PauseChanged() {
	p.pauseMu.Lock()
	defer p.pauseMu.Unlock()
	paused := p.c.Paused()
	if p.flow.setPaused(paused) != paused {
		p.log.Info("the pushed consumer is paused or resumed", "paused", paused)
	}
}

// pauseRecheck is how often a paused pusher asks the server whether its
// consumer is paused still: a resume advisory missed (NATS away when it
// came) would otherwise hold it for ever.
const pauseRecheck = 30 * time.Second

// retrier tries the failed jobs again, one at a time, when flow says, and
// watches a pause.
func (p *Pusher) retrier(ctx context.Context) {
	for {
		j, wait, ok := p.flow.retryDue()
		var timer, recheck <-chan time.Time
		if ok && wait > 0 {
			timer = time.After(wait)
		}
		if p.flow.isPaused() {
			recheck = time.After(pauseRecheck)
		}
		if ok && wait <= 0 {
			if b := p.cfg.Batch; b != nil {
				if js := p.flow.takeBatch(j, b.MaxMessages); js != nil {
					p.pushBatch(ctx, js)
				}
			} else if p.flow.take(j) {
				p.push(ctx, j)
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-p.stop:
			return
		case <-p.flow.changed:
		case <-timer:
		case <-recheck:
			if _, err := p.c.Info(ctx); err == nil { // which the consumer takes
				p.PauseChanged()
			}
		}
	}
}

// push sends j once and acts on the answer. One whose lease lapsed (NATS
// away longer than it lasts) or was voided (a reset) is dropped unsent:
// the server has it again, and its next delivery is pushed.
func (p *Pusher) push(ctx context.Context, j *job) {
	if !p.c.Holds(j.d) {
		p.flow.dropped(1)
		return
	}
	started := time.Now()
	p.m.inFlight.Inc()
	a := p.send(ctx, j.d, started)
	p.m.inFlight.Dec()
	p.m.duration.Observe(time.Since(started).Seconds())
	switch a.verdict {
	case ack:
		p.m.requests.acked.Inc()
		own := p.flow.succeeded(started, 1)
		p.up.answered()
		p.toAck <- j.d
		for _, o := range own { // their failures were their own: the normal path
			p.settle(ctx, lease.OpNak, []*consumer.Delivery{o.d}, settle.Args{Delay: p.nakDelay(o)})
		}
	case terminate:
		p.m.requests.terminated.Inc()
		if a.status != 0 {
			p.flow.answered(1)
			p.up.answered()
		} else {
			p.flow.dropped(1)
		}
		p.failed(a.err)
		reason := "the request could not be made" // as for a batch's message
		if a.status != 0 {
			reason = fmt.Sprintf("HTTP %d", a.status)
		}
		p.settle(ctx, lease.OpTerm, []*consumer.Delivery{j.d}, settle.Args{Reason: reason})
	case retry:
		p.m.requests.retried.Inc()
		p.failed(a.err)
		j.retryAfter = a.delay
		if p.flow.failedRetryable(time.Now(), j) {
			p.up.wentDown(a.err)
		}
	case abandoned:
		p.flow.dropped(1)
	}
}

// send makes the request of d and reads its answer.
func (p *Pusher) send(ctx context.Context, d *consumer.Delivery, now time.Time) answer {
	if d.Origin.IsValid() {
		ctx = trace.ContextWithRemoteSpanContext(ctx, d.Origin)
	}
	rctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	req, err := p.request(rctx, d, now)
	if err != nil {
		return answer{verdict: terminate, err: "the request could not be made: " + err.Error()}
	}
	resp, err := p.rt.RoundTrip(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
		_ = resp.Body.Close()
	}
	return judge(ctx, resp, err, time.Now())
}

// failed records the last thing that went wrong.
func (p *Pusher) failed(what string) {
	what = wire.ValidUTF8(what) // an endpoint's status line may not be UTF-8: GetConsumer shows it
	p.mu.Lock()
	p.lastErr, p.lastErrAt = what, time.Now()
	p.mu.Unlock()
}

// State is a pusher as GetConsumer shows it.
type State struct {
	URL         string // without its query
	InFlight    int
	EndpointUp  bool // false: held back
	LastError   string
	LastErrorAt time.Time
}

// State is the pusher's state now.
func (p *Pusher) State() State {
	inFlight, held := p.flow.state()
	p.mu.Lock()
	defer p.mu.Unlock()
	return State{URL: redact(p.cfg.URL), InFlight: inFlight, EndpointUp: !held, LastError: p.lastErr, LastErrorAt: p.lastErrAt}
}

// redact is the URL without its query, which may carry a secret.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.RawQuery, u.Fragment, u.User = "", "", nil
	return u.String()
}
