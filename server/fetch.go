package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Delivery is one leased message.
type Delivery struct {
	Token    string
	Subject  string
	Data     []byte
	Header   nats.Header
	Meta     Metadata
	Deadline time.Time
}

// EmptyReason says why a Fetch returned nothing.
type EmptyReason int

const (
	EmptyNone          EmptyReason = iota // messages were returned
	EmptyNoMessages                       // nothing arrived before expires
	EmptyMaxAckPending                    // the consumer is at max_ack_pending
	EmptyMaxBytes                         // the next message is larger than max_bytes
	EmptyMaxWaiting                       // too many pulls already wait on the consumer
)

// FetchRequest is a validated Fetch.
type FetchRequest struct {
	Batch     int
	Expires   time.Duration // 0: return at once with what is available
	MaxBytes  int64         // 0: no limit
	Principal string
}

// FetchResult is what a Fetch leased.
type FetchResult struct {
	Messages []*Delivery
	Empty    EmptyReason
}

const (
	// immediateExpiry is the server-side expiry of a Fetch with expires 0s:
	// long enough for what is available to be delivered, short enough to be
	// "at once". A pull with no expiry at all would be held forever at
	// max_ack_pending.
	immediateExpiry = 20 * time.Millisecond
	// deadlineSlack is kept from the caller's own deadline so the answer can
	// reach it in time.
	deadlineSlack = 50 * time.Millisecond
	// maxHeartbeat is the longest idle heartbeat asked of a waiting pull. It
	// bounds both how long a lost server goes unnoticed and how long a pull
	// that was cut short at max_ack_pending stays open.
	maxHeartbeat = time.Second
	// lostGrace is how long past its expiry a pull without heartbeats may stay
	// silent before the server is taken to be gone.
	lostGrace = 2 * time.Second
)

// pullRequest is the JSON body of $JS.API.CONSUMER.MSG.NEXT.
type pullRequest struct {
	Batch     int           `json:"batch"`
	Expires   time.Duration `json:"expires,omitempty"`
	NoWait    bool          `json:"no_wait,omitempty"`
	MaxBytes  int64         `json:"max_bytes,omitempty"`
	Heartbeat time.Duration `json:"idle_heartbeat,omitempty"`
}

// pull is one pull request, from the moment it is sent until the server ends
// it. Its subscription stays open that long, even after the Fetch that sent
// it has returned (dropped): JetStream cannot withdraw a pull.
type pull struct {
	b       *binding
	sub     *nats.Subscription
	req     pullRequest
	sentAt  time.Time
	wake    chan struct{}
	mu      sync.Mutex
	got     []*Delivery
	n       int // messages received, including orphans
	ended   bool
	status  string // the status that ended it, "" when the batch was filled
	desc    string
	seen    time.Time // last message or heartbeat
	dropped bool      // the Fetch left before the pull ended
}

func (b *binding) startPull(req pullRequest) (*pull, error) {
	p := &pull{b: b, req: req, wake: make(chan struct{}, 1)}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	// Like a settle, a pull must not wait in the reconnect buffer.
	if !b.nc.IsConnected() {
		return nil, fmt.Errorf("%w: not connected", ErrUnavailable)
	}
	// Pulled messages keep their own subject and are told apart by the
	// subscription they arrive on, so each pull has its own.
	reply := nats.NewInbox()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sub, err = b.nc.Subscribe(reply, p.onMsg); err != nil {
		return nil, fmt.Errorf("%w: subscribe pull inbox: %v", ErrUnavailable, err)
	}
	// A message dropped as a slow consumer would be stranded until
	// ack_wait; what arrives is bounded by the batch asked for.
	_ = p.sub.SetPendingLimits(-1, -1)
	p.sentAt = time.Now()
	p.seen = p.sentAt
	subj := "$JS.API.CONSUMER.MSG.NEXT." + b.stream + "." + b.consumer
	if err := b.nc.PublishMsg(&nats.Msg{Subject: subj, Reply: reply, Data: body}); err != nil {
		_ = p.sub.Unsubscribe()
		return nil, fmt.Errorf("%w: send pull: %v", ErrUnavailable, err)
	}
	return p, nil
}

// onMsg runs on the subscription's goroutine for every message of the pull.
func (p *pull) onMsg(m *nats.Msg) {
	now := time.Now()
	status := ""
	if len(m.Data) == 0 && m.Reply == "" {
		status = m.Header.Get("Status")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return
	}
	p.seen = now
	switch {
	case status == "100":
		return
	case status != "":
		p.end(status, m.Header.Get("Description"), now)
	default:
		d, err := p.b.receive(m, now)
		if err != nil {
			p.b.log.Warn("pulled message without a JetStream ack subject", "subject", m.Subject)
			return
		}
		p.n++
		if p.dropped {
			p.b.addOrphan(d, p)
		} else {
			p.got = append(p.got, d)
		}
		if p.n >= p.req.Batch {
			p.end("", "", now)
		}
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// end closes the pull; p.mu is held.
func (p *pull) end(status, desc string, now time.Time) {
	p.ended, p.status, p.desc = true, status, desc
	_ = p.sub.Unsubscribe()
	<-p.b.waiting
	if p.dropped {
		p.b.pullEnded(p, now)
	}
}

// drop hands the pull over to the binding: what it already received and
// everything that still arrives for it becomes an orphan, for the next Fetch
// or a Nak once the server has ended the pull.
func (p *pull) drop(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped {
		return
	}
	p.dropped = true
	p.b.trackDropped(p)
	for _, d := range p.got {
		p.b.addOrphan(d, p)
	}
	p.got = nil
	if p.ended {
		p.b.pullEnded(p, now)
	}
}

// lost reports whether the server has gone silent on an open pull.
func (p *pull) lost(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return false
	}
	if hb := p.req.Heartbeat; hb > 0 {
		return now.Sub(p.seen) > 3*hb
	}
	return now.Sub(p.sentAt) > p.req.Expires+lostGrace
}

// fetch leases up to req.Batch messages: one pull request that asks for what
// is available, waits up to expires for a first message, and ends as soon as
// the server has sent what it had.
func (b *binding) fetch(ctx context.Context, req FetchRequest) (FetchResult, error) {
	if err := ctx.Err(); err != nil {
		return FetchResult{}, err
	}
	now := time.Now()
	if held := b.takeOrphans(req.Batch, now); len(held) > 0 {
		if err := ctx.Err(); err != nil {
			b.putBack(held)
			return FetchResult{}, err
		}
		ds := make([]*Delivery, len(held))
		for i, o := range held {
			ds[i] = o.d
		}
		b.metrics.orphans.WithLabelValues(b.stream, b.consumer, "handed").Add(float64(len(ds)))
		return b.lease(ds, req.Principal), nil
	}
	if !b.nc.IsConnected() {
		return FetchResult{}, fmt.Errorf("%w: not connected", ErrUnavailable)
	}
	expires := req.Expires
	if dl, ok := ctx.Deadline(); ok {
		expires = min(expires, time.Until(dl)-deadlineSlack)
		if expires < 0 {
			expires = 0
		}
	}
	if b.maxExpires > 0 {
		expires = min(expires, b.maxExpires)
	}
	until := now.Add(expires)
	noWait := true
	for {
		if !b.acquireWaiting(ctx, until) {
			if ctx.Err() != nil {
				return FetchResult{}, ctx.Err()
			}
			return FetchResult{Empty: EmptyMaxWaiting}, nil
		}
		p, err := b.startPull(b.pullFor(req, time.Until(until), noWait))
		if err != nil {
			<-b.waiting
			return FetchResult{}, err
		}
		ds, status, desc, err := b.await(ctx, p)
		if errors.Is(err, errPullLost) && b.serverFullOfPulls(ctx) {
			// Past max_waiting the server drops a pull that asks for
			// heartbeats without a word: other clients (or replicas) hold
			// every place.
			return FetchResult{Empty: EmptyMaxWaiting}, nil
		}
		if err != nil {
			return FetchResult{}, err
		}
		if len(ds) > 0 {
			if err := ctx.Err(); err != nil {
				// The caller left as the pull ended: its answer would be lost.
				b.returnOrphans(ds, time.Now())
				return FetchResult{}, err
			}
			return b.lease(ds, req.Principal), nil
		}
		retry := false
		switch status {
		case "408":
			// "Requests Pending": other pulls wait for more than is pending
			// (the consumer is at max_ack_pending), so a no_wait pull is
			// refused at once. Wait in line with a plain pull instead.
			retry = desc == "Requests Pending"
			noWait = false
		case "409":
			switch desc {
			case "Consumer Deleted":
				return FetchResult{}, fmt.Errorf("%w: the consumer was deleted", ErrConsumerNotFound)
			case "Leadership Change":
				retry = true
			case "Message Size Exceeds MaxBytes":
				return FetchResult{Empty: EmptyMaxBytes}, nil
			case "Exceeded MaxWaiting":
				return FetchResult{Empty: EmptyMaxWaiting}, nil
			case "Server Shutdown":
				return FetchResult{}, fmt.Errorf("%w: the server is shutting down", ErrUnavailable)
			case "Batch Completed":
			default: // a limit of the consumer's (max_batch, max_expires, max_bytes) or the like
				return FetchResult{}, b.refused(status, desc)
			}
		case "503":
			return FetchResult{}, b.noResponders(ctx)
		case "404", "":
		default:
			return FetchResult{}, b.refused(status, desc)
		}
		if !retry || time.Until(until) < immediateExpiry {
			return FetchResult{Empty: b.emptyReason(ctx)}, nil
		}
	}
}

// errPullLost is a pull the server went silent on: no message, no status,
// no heartbeat.
var errPullLost = fmt.Errorf("%w: no answer or heartbeat from the server for the pull", ErrUnavailable)

// serverFullOfPulls reports whether the consumer, reachable, has as many
// pulls waiting as its max_waiting allows.
func (b *binding) serverFullOfPulls(ctx context.Context) bool {
	if !b.nc.IsConnected() {
		return false
	}
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(b.timeout, time.Second))
	defer cancel()
	ci, err := b.cons.Info(ictx)
	return err == nil && ci.Config.MaxWaiting > 0 && ci.NumWaiting >= ci.Config.MaxWaiting
}

// refused logs a pull the server turned down, in full, and says so without
// the server's words.
func (b *binding) refused(status, desc string) error {
	b.log.Error("the server refused a pull request", "status", status, "description", desc)
	return fmt.Errorf("%w: %s %s", errPullRefused, status, desc)
}

// pullFor shapes the pull for a Fetch with wait left to go.
func (b *binding) pullFor(req FetchRequest, wait time.Duration, noWait bool) pullRequest {
	batch := req.Batch
	if room := b.maxAckPending - b.leases.live(); room > 0 && room < batch {
		// A no_wait pull cut short by max_ack_pending is held open by the
		// server until the next heartbeat: ask only for what fits.
		batch = room
	}
	if b.maxBatch > 0 {
		batch = min(batch, b.maxBatch)
	}
	if !noWait {
		// A plain pull would wait for its whole batch: ask for one, which
		// ends it the moment it arrives.
		batch = 1
	}
	pr := pullRequest{Batch: batch, NoWait: noWait, MaxBytes: req.MaxBytes, Expires: max(wait, immediateExpiry)}
	if pr.Expires >= 4*immediateExpiry {
		pr.Heartbeat = min(pr.Expires/2, maxHeartbeat)
	}
	return pr
}

func (b *binding) acquireWaiting(ctx context.Context, until time.Time) bool {
	select {
	case b.waiting <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(time.Until(until))
	defer t.Stop()
	select {
	case b.waiting <- struct{}{}:
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

// await waits for p to end. If the caller leaves first, or the server goes
// silent, p is dropped: it stays routed until the server ends it, and what
// arrives for it goes to the next Fetch.
func (b *binding) await(ctx context.Context, p *pull) ([]*Delivery, string, string, error) {
	check := time.NewTicker(min(maxHeartbeat, p.req.Expires+lostGrace))
	defer check.Stop()
	for {
		select {
		case <-p.wake:
			p.mu.Lock()
			if p.ended {
				ds, status, desc := p.got, p.status, p.desc
				p.got = nil
				p.mu.Unlock()
				return ds, status, desc, nil
			}
			p.mu.Unlock()
		case <-ctx.Done():
			p.drop(time.Now())
			return nil, "", "", ctx.Err()
		case now := <-check.C:
			if p.lost(now) {
				p.drop(now)
				return nil, "", "", errPullLost
			}
		}
	}
}

// lease issues the tokens of deliveries that are about to be handed out.
func (b *binding) lease(ds []*Delivery, principal string) FetchResult {
	for _, d := range ds {
		d.Token = b.keys.seal(b.claimsOf(d), b.stream, b.consumer, principal)
	}
	return FetchResult{Messages: ds}
}

// emptyReason says why nothing came: the gateway's own count of leases, or
// failing that the server's, at max_ack_pending.
func (b *binding) emptyReason(ctx context.Context) EmptyReason {
	if b.leases.live() >= b.maxAckPending {
		return EmptyMaxAckPending
	}
	if b.serverAtMaxAckPending(ctx) {
		return EmptyMaxAckPending
	}
	return EmptyNoMessages
}

// serverAtMaxAckPending asks the server whether the consumer is at
// max_ack_pending with messages waiting, at most once a second: clients
// polling with expires 0s must not turn into a stream of info requests.
func (b *binding) serverAtMaxAckPending(ctx context.Context) bool {
	b.mu.Lock()
	if time.Since(b.fullAt) < time.Second {
		full := b.full
		b.mu.Unlock()
		return full
	}
	b.mu.Unlock()
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(b.timeout, time.Second))
	defer cancel()
	ci, err := b.cons.Info(ictx)
	full := err == nil && ci.NumAckPending >= b.maxAckPending && ci.NumPending > 0
	b.mu.Lock()
	b.full, b.fullAt = full, time.Now()
	b.mu.Unlock()
	return full
}
