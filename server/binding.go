package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ConsumerConfig is a durable pull consumer the gateway fronts. Bootstrap
// sends AckWait, MaxAckPending and DeliverPolicy explicitly, plus the filter
// subjects and start position when given; every other field keeps the
// server's default.
type ConsumerConfig struct {
	Stream         string
	Name           string
	FilterSubjects []string
	AckWait        time.Duration
	MaxAckPending  int
	DeliverPolicy  jetstream.DeliverPolicy
	OptStartSeq    uint64
	OptStartTime   *time.Time
}

const (
	sweepEvery = 100 * time.Millisecond
	// orphanHold is how long a message that arrived for a canceled Fetch
	// waits for the next Fetch before it is nak'ed back to the server.
	orphanHold = 250 * time.Millisecond
)

// binding is the gateway's hold on one durable consumer: its leases, and the
// pulls and settles it has in flight.
type binding struct {
	stream, consumer string
	nc               *nats.Conn
	cons             jetstream.Consumer
	inbox            *inbox
	keys             *Keyring
	self             GatewayID
	timeout          time.Duration
	log              *slog.Logger
	metrics          *metrics

	// From the consumer's configuration when it was bound.
	ackWait       time.Duration
	backoff       []time.Duration
	maxAckPending int
	maxBatch      int           // the server's max_request_batch; 0 is none
	maxExpires    time.Duration // the server's max_request_expires; 0 is none

	leases  *leaseTable
	waiting chan struct{} // one token per pull open on the server

	mu      sync.Mutex
	orphans []*orphan
	dropped map[*pull]struct{} // pulls open on the server whose Fetch has gone
	full    bool               // the server's last word on max_ack_pending
	fullAt  time.Time
}

// orphan is a message that arrived for a pull whose Fetch had gone.
type orphan struct {
	d       *Delivery
	pull    *pull
	readyAt time.Time // zero while its pull may still be open
}

// bootstrap creates or updates the durable consumer c describes.
func bootstrap(ctx context.Context, js jetstream.JetStream, c ConsumerConfig) (jetstream.Consumer, error) {
	s, err := js.Stream(ctx, c.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("stream %q does not exist: create it, or give --stream-subjects so that jetgate creates it", c.Stream)
	}
	if err != nil {
		return nil, fmt.Errorf("look up stream %q: %w", c.Stream, err)
	}
	cfg := jetstream.ConsumerConfig{
		Durable:       c.Name,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       c.AckWait,
		MaxAckPending: c.MaxAckPending,
		DeliverPolicy: c.DeliverPolicy,
		OptStartSeq:   c.OptStartSeq,
		OptStartTime:  c.OptStartTime,
	}
	switch len(c.FilterSubjects) {
	case 0:
	case 1:
		cfg.FilterSubject = c.FilterSubjects[0]
	default:
		cfg.FilterSubjects = c.FilterSubjects
	}
	cons, err := s.CreateOrUpdateConsumer(ctx, cfg)
	if err != nil {
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) {
			return nil, fmt.Errorf("stream %q consumer %q: the server refused its configuration: %s", c.Stream, c.Name, apiErr.Description)
		}
		return nil, fmt.Errorf("stream %q consumer %q: create or update: %w", c.Stream, c.Name, err)
	}
	return cons, nil
}

func newBinding(cons jetstream.Consumer, nc *nats.Conn, in *inbox, keys *Keyring, self GatewayID, timeout time.Duration, log *slog.Logger, m *metrics) *binding {
	ci := cons.CachedInfo()
	cfg := ci.Config
	maxWaiting := cfg.MaxWaiting
	if maxWaiting <= 1 {
		maxWaiting = 2
	}
	b := &binding{
		stream:        ci.Stream,
		consumer:      ci.Name,
		nc:            nc,
		cons:          cons,
		inbox:         in,
		keys:          keys,
		self:          self,
		timeout:       timeout,
		log:           log.With("stream", ci.Stream, "consumer", ci.Name),
		metrics:       m,
		ackWait:       cfg.AckWait,
		backoff:       cfg.BackOff,
		maxAckPending: cfg.MaxAckPending,
		maxBatch:      cfg.MaxRequestBatch,
		maxExpires:    cfg.MaxRequestExpires,
		leases:        newLeaseTable(cfg.AckWait),
		// Stay below the consumer's max_waiting: past it the server drops
		// pulls that carry heartbeats without a word.
		waiting: make(chan struct{}, maxWaiting-1),
		dropped: make(map[*pull]struct{}),
	}
	return b
}

// ackWaitFor is how long the server waits for the answer to the given
// delivery before redelivering it: its BackOff step, or ack_wait.
func (b *binding) ackWaitFor(delivered uint64) time.Duration {
	if n := uint64(len(b.backoff)); n > 0 {
		if delivered > n {
			delivered = n
		}
		if delivered > 0 {
			return b.backoff[delivered-1]
		}
	}
	return b.ackWait
}

// leaseDeadline is when a lease clocked from start ends: a margin before the
// server would redeliver, so the gateway never calls a lease live after
// that. It is cut to the millisecond, as tokens carry it.
func (b *binding) leaseDeadline(start time.Time, delivered uint64) time.Time {
	w := b.ackWaitFor(delivered)
	margin := min(w/10, 2*time.Second)
	return start.Add(w - margin).Truncate(time.Millisecond)
}

// receive turns a pulled message into a delivery and records its lease.
func (b *binding) receive(m *nats.Msg, now time.Time) (*Delivery, error) {
	md, err := parseAckSubject(m.Reply)
	if err != nil {
		return nil, err
	}
	d := &Delivery{
		Subject:  m.Subject,
		Data:     m.Data,
		Header:   m.Header,
		Meta:     md,
		Deadline: b.leaseDeadline(now, md.Delivered),
	}
	b.leases.add(&lease{
		streamSeq:   md.StreamSeq,
		consumerSeq: md.ConsumerSeq,
		delivered:   md.Delivered,
		deadline:    d.Deadline,
		ackSubject:  m.Reply,
	})
	return d, nil
}

func (b *binding) claimsOf(d *Delivery) claims {
	return claims{
		issuer:      b.self,
		streamSeq:   d.Meta.StreamSeq,
		consumerSeq: d.Meta.ConsumerSeq,
		delivered:   d.Meta.Delivered,
		deadline:    d.Deadline,
	}
}

// run sweeps the lease table and sends orphans back until ctx ends.
func (b *binding) run(ctx context.Context) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			b.leases.sweep(now)
			b.endLostPulls(now)
			b.nakOrphans(ctx, now, false)
		}
	}
}

func (b *binding) addOrphan(d *Delivery, p *pull) {
	b.mu.Lock()
	b.orphans = append(b.orphans, &orphan{d: d, pull: p})
	b.mu.Unlock()
}

// returnOrphans keeps deliveries of an ended pull that no caller will see,
// for the next Fetch or a Nak.
func (b *binding) returnOrphans(ds []*Delivery, now time.Time) {
	b.mu.Lock()
	for _, d := range ds {
		b.orphans = append(b.orphans, &orphan{d: d, readyAt: now.Add(orphanHold)})
	}
	b.mu.Unlock()
}

func (b *binding) trackDropped(p *pull) {
	b.mu.Lock()
	b.dropped[p] = struct{}{}
	b.mu.Unlock()
}

// endLostPulls gives up on dropped pulls the server has been silent on for
// longer than their expiry: it is gone, and so is the pull.
func (b *binding) endLostPulls(now time.Time) {
	b.mu.Lock()
	var lost []*pull
	for p := range b.dropped {
		if now.Sub(p.sentAt) > p.req.Expires+lostGrace {
			lost = append(lost, p)
		}
	}
	b.mu.Unlock()
	for _, p := range lost {
		p.mu.Lock()
		if !p.ended {
			p.end("lost", "", now)
		}
		p.mu.Unlock()
	}
}

// pullEnded starts the hold of the orphans of a dropped pull that has ended.
func (b *binding) pullEnded(p *pull, now time.Time) {
	b.mu.Lock()
	delete(b.dropped, p)
	for _, o := range b.orphans {
		if o.pull == p {
			o.readyAt = now.Add(orphanHold)
		}
	}
	b.mu.Unlock()
}

// takeOrphans hands up to n orphans whose leases are still live to a Fetch.
func (b *binding) takeOrphans(n int, now time.Time) []*orphan {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*orphan
	keep := b.orphans[:0]
	for _, o := range b.orphans {
		switch {
		case !now.Before(o.d.Deadline):
			// The server redelivers it; nothing to do.
		case len(out) < n:
			out = append(out, o)
		default:
			keep = append(keep, o)
		}
	}
	clear(b.orphans[len(keep):])
	b.orphans = keep
	return out
}

// putBack returns orphans a Fetch took but could not hand out, as they were.
func (b *binding) putBack(os []*orphan) {
	b.mu.Lock()
	b.orphans = append(b.orphans, os...)
	b.mu.Unlock()
}

// nakOrphans sends back the orphans whose pull has ended and whose hold has
// passed (all whose pull has ended, when the gateway closes), so that they
// are redelivered at once rather than after ack_wait. Naking before the pull
// ended would send them straight back into it.
func (b *binding) nakOrphans(ctx context.Context, now time.Time, closing bool) {
	b.mu.Lock()
	var due []claims
	keep := b.orphans[:0]
	for _, o := range b.orphans {
		switch {
		case !now.Before(o.d.Deadline):
		case !o.readyAt.IsZero() && (closing || !now.Before(o.readyAt)):
			due = append(due, b.claimsOf(o.d))
		default:
			keep = append(keep, o)
		}
	}
	clear(b.orphans[len(keep):])
	b.orphans = keep
	b.mu.Unlock()
	if len(due) == 0 {
		return
	}
	b.metrics.orphans.WithLabelValues(b.stream, b.consumer, "naked").Add(float64(len(due)))
	for i, out := range b.settleLocal(ctx, OpNak, due, settleArgs{}) {
		if out.Err != nil {
			b.log.Warn("could not nak a message left by a canceled fetch; it returns after ack_wait",
				"stream_seq", due[i].streamSeq, "err", out.Err)
		}
	}
}

// settleArgs are the optional parts of a settle.
type settleArgs struct {
	delay     time.Duration // Nak
	reason    string        // Term
	principal string        // the caller, bound into Extend's new token
}

func (a settleArgs) payload(op SettleOp) []byte {
	switch op {
	case OpAck:
		return []byte("+ACK")
	case OpNak:
		if a.delay > 0 {
			return []byte(`-NAK {"delay":` + strconv.FormatInt(int64(a.delay), 10) + `}`)
		}
		return []byte("-NAK")
	case OpTerm:
		if r := strings.TrimSpace(a.reason); r != "" {
			return []byte("+TERM " + r)
		}
		return []byte("+TERM")
	case OpExtend:
		return []byte("+WPI")
	}
	return nil
}

// Outcome is the result of settling one token.
type Outcome struct {
	Err      error     // nil on success
	NewToken string    // Extend only
	Deadline time.Time // Extend only
}

// settleLocal settles leases this gateway holds. Every settle to send is
// published before any reply is awaited, and each is reported only once the
// server has confirmed it.
func (b *binding) settleLocal(ctx context.Context, op SettleOp, cs []claims, args settleArgs) []Outcome {
	out := make([]Outcome, len(cs))
	now := time.Now()
	var subjects []string
	var idx []int
	for i, c := range cs {
		subj, err := b.leases.begin(c, op, now)
		switch {
		case err != nil:
			out[i].Err = err
		case subj != "":
			subjects = append(subjects, subj)
			idx = append(idx, i)
		}
	}
	if len(subjects) == 0 {
		return out
	}
	errs := b.request(ctx, subjects, args.payload(op))
	if slices.Contains(errs, errNoResponders) {
		gone := b.noResponders(ctx)
		for j, err := range errs {
			if err == errNoResponders {
				errs[j] = gone
			}
		}
	}
	done := time.Now()
	for j, i := range idx {
		c := cs[i]
		var nd time.Time
		if errs[j] == nil && op == OpExtend {
			nd = b.leaseDeadline(now, c.delivered)
			c.deadline = nd
			c.issuer = b.self // for an adopted lease, this replica holds it now
			out[i].NewToken = b.keys.seal(c, b.stream, b.consumer, args.principal)
			out[i].Deadline = nd
		}
		if errors.Is(errs[j], errUnconfirmed) {
			b.leases.unsure(cs[i], op)
		} else {
			b.leases.finish(cs[i], op, errs[j] == nil, done, nd)
		}
		out[i].Err = errs[j]
	}
	return out
}

// request publishes payload to every subject as a request and waits for all
// the replies, pipelined: nothing waits for one reply before sending the next.
func (b *binding) request(ctx context.Context, subjects []string, payload []byte) []error {
	errs := make([]error, len(subjects))
	type reply struct {
		i int
		m *nats.Msg
	}
	replies := make(chan reply, len(subjects))
	ids := make([]uint64, 0, len(subjects))
	defer func() {
		for _, id := range ids {
			b.inbox.close(id)
		}
	}()
	pending := 0
	for i, subj := range subjects {
		rsubj, id := b.inbox.open(func(m *nats.Msg) {
			select {
			case replies <- reply{i, m}:
			default:
			}
		})
		ids = append(ids, id)
		// A settle must never wait in the client's reconnect buffer: sent
		// after its lease's deadline, it would land on the next delivery.
		if !b.nc.IsConnected() {
			errs[i] = fmt.Errorf("%w: not connected", ErrUnavailable)
			continue
		}
		if err := b.nc.PublishMsg(&nats.Msg{Subject: subj, Reply: rsubj, Data: payload}); err != nil {
			errs[i] = fmt.Errorf("%w: publish settle: %v", ErrUnavailable, err)
			continue
		}
		pending++
	}
	answered := make([]bool, len(subjects))
	timer := time.NewTimer(b.timeout)
	defer timer.Stop()
	for pending > 0 {
		select {
		case r := <-replies:
			if answered[r.i] {
				continue
			}
			answered[r.i] = true
			pending--
			switch r.m.Header.Get("Status") {
			case "":
			case "503":
				errs[r.i] = errNoResponders
			default:
				errs[r.i] = fmt.Errorf("%w: settle answered with status %s", ErrUnavailable, r.m.Header.Get("Status"))
			}
		case <-timer.C:
			return markUnanswered(errs, answered, fmt.Errorf("%w in %v", errUnconfirmed, b.timeout))
		case <-ctx.Done():
			return markUnanswered(errs, answered, fmt.Errorf("%w: %w", errUnconfirmed, ctx.Err()))
		}
	}
	return errs
}

// errNoResponders marks a settle that no server took, until noResponders
// says why.
var errNoResponders = errors.New("no responders")

// errUnconfirmed is a settle that was sent but not confirmed: it may or may
// not have been applied.
var errUnconfirmed = fmt.Errorf("%w: the server did not confirm the settle", ErrUnavailable)

// noResponders explains why nothing answered for the consumer: it was
// deleted (NOT_FOUND), or its leader is being elected or the server is
// unreachable (UNAVAILABLE, worth a retry).
func (b *binding) noResponders(ctx context.Context) error {
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(b.timeout, time.Second))
	defer cancel()
	if _, err := b.cons.Info(ictx); errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("%w: consumer %q of stream %q was deleted", ErrConsumerNotFound, b.consumer, b.stream)
	}
	return fmt.Errorf("%w: no JetStream responder for the consumer (a leader election, or the server is unreachable)", ErrUnavailable)
}

func markUnanswered(errs []error, answered []bool, err error) []error {
	for i := range errs {
		if errs[i] == nil && !answered[i] {
			errs[i] = err
		}
	}
	return errs
}
