// Package pull speaks JetStream's pull protocol on the gateway's own inbox
// subscriptions: one raw request on $JS.API.CONSUMER.MSG.NEXT per pull, its
// messages and status replies routed by the subscription they arrive on,
// idle heartbeats to notice a lost server, and the rule that a pull lives
// until the server ends it, whoever still waits for it (JetStream cannot
// withdraw a pull). status.go turns the server's statuses into errors.
package pull

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
)

const (
	// ImmediateExpiry is the server-side expiry of a pull that is to return
	// at once: long enough for what is available to be delivered, short
	// enough to be "at once". A pull with no expiry at all would be held
	// forever at max_ack_pending.
	ImmediateExpiry = 20 * time.Millisecond
	// MaxHeartbeat is the longest idle heartbeat asked of a waiting pull. It
	// bounds both how long a lost server goes unnoticed and how long a pull
	// that was cut short at max_ack_pending stays open.
	MaxHeartbeat = time.Second
	// LostGrace is how long past its expiry a pull without heartbeats may
	// stay silent before the server is taken to be gone.
	LostGrace = 2 * time.Second
	// missedHeartbeats is how many heartbeats may be missed before a waiting
	// pull is taken to be lost.
	missedHeartbeats = 3
	// completeGrace is how long a pull the server reported complete waits
	// for messages of its batch that have not come yet.
	completeGrace = LostGrace
)

// Request is the JSON body of $JS.API.CONSUMER.MSG.NEXT.
type Request struct {
	Batch     int           `json:"batch"`
	Expires   time.Duration `json:"expires,omitempty"`
	NoWait    bool          `json:"no_wait,omitempty"`
	MaxBytes  int64         `json:"max_bytes,omitempty"`
	Heartbeat time.Duration `json:"idle_heartbeat,omitempty"`
	Priority
}

// Priority is what a pull asks of a consumer with priority groups (ADR-42).
type Priority struct {
	Group         string `json:"group,omitempty"`
	MinPending    int64  `json:"min_pending,omitempty"`     // overflow
	MinAckPending int64  `json:"min_ack_pending,omitempty"` // overflow
	Priority      uint8  `json:"priority,omitempty"`        // prioritized: 0 first, 9 last
	PinID         string `json:"id,omitempty"`              // pinned_client: the pin held
}

// PinHeader carries, on a delivery of a pinned_client group, the pin its
// puller now holds.
const PinHeader = "Nats-Pin-Id"

// NewRequest shapes a pull that waits up to wait: at least ImmediateExpiry,
// and with idle heartbeats when it is long enough to need them.
func NewRequest(batch int, wait time.Duration, maxBytes int64, pri Priority) Request {
	r := Request{Batch: batch, MaxBytes: maxBytes, Expires: max(wait, ImmediateExpiry), Priority: pri}
	if r.Expires >= 4*ImmediateExpiry {
		r.Heartbeat = min(r.Expires/2, MaxHeartbeat)
	}
	return r
}

// Msg is a message a pull received, and when: a lease is clocked from it.
type Msg struct {
	*nats.Msg
	At time.Time
}

// Pull is one pull request, from the moment it is sent until the server ends
// it. Its subscription stays open that long, even after whoever sent it
// stopped waiting: what still arrives is kept for Take.
type Pull struct {
	sub     *nats.Subscription
	req     Request
	sentAt  time.Time
	release func()
	wake    chan struct{}

	mu   sync.Mutex
	msgs []Msg
	n    int // messages received, taken or not
	// completing: the server reported the batch delivered (409 Batch
	// Completed) before all of it arrived; the rest is on its way.
	completing bool
	ended      bool
	withdrawn  bool  // Withdraw was called
	err        error // why it ended: nil when the batch was filled
	endedAt    time.Time
	seen       time.Time // last message or heartbeat
	arrived    func()    // OnMessage
}

// API is the prefix of JetStream's API subjects: $JS.API., or, for a
// JetStream domain (leaf nodes), $JS.<domain>.API.
func API(domain string) string {
	if domain == "" {
		return "$JS.API."
	}
	return "$JS." + domain + ".API."
}

// NextSubject is where the pulls of consumer of stream are sent, under the
// API prefix api.
func NextSubject(api, stream, consumer string) string {
	return api + "CONSUMER.MSG.NEXT." + stream + "." + consumer
}

// Start sends req for the consumer. release is called once, when the pull
// ends (to free the caller's count of waiting pulls).
func Start(nc *nats.Conn, subject string, req Request, release func()) (*Pull, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	// A pull must not wait in the reconnect buffer: the server would get it
	// long after its caller left.
	if !nc.IsConnected() {
		return nil, fmt.Errorf("%w: not connected", errs.ErrUnavailable)
	}
	p := &Pull{req: req, release: release, wake: make(chan struct{}, 1)}
	// Pulled messages keep their own subject and are told apart by the
	// subscription they arrive on, so each pull has its own.
	reply := nats.NewInbox()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sub, err = nc.Subscribe(reply, p.onMsg); err != nil {
		return nil, fmt.Errorf("%w: subscribe pull inbox: %v", errs.ErrUnavailable, err)
	}
	// A message dropped as a slow consumer would be stranded until
	// ack_wait; what arrives is bounded by the batch asked for.
	_ = p.sub.SetPendingLimits(-1, -1)
	p.sentAt = time.Now()
	p.seen = p.sentAt
	if err := nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Data: body}); err != nil {
		_ = p.sub.Unsubscribe()
		return nil, fmt.Errorf("%w: send pull: %v", errs.ErrUnavailable, err)
	}
	return p, nil
}

// onMsg runs on the subscription's goroutine for every message of the pull.
func (p *Pull) onMsg(m *nats.Msg) {
	if arrived := p.record(m); arrived != nil {
		arrived()
	}
}

// record takes in what the server sent on the pull and returns the
// OnMessage hook to call when it was a message.
func (p *Pull) record(m *nats.Msg) (arrived func()) {
	now := time.Now()
	status := ""
	if len(m.Data) == 0 && m.Reply == "" {
		status = m.Header.Get("Status")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ended {
		return nil
	}
	p.seen = now
	switch status {
	case "100": // idle heartbeat (or flow control, which pulls do not use)
		return nil
	case "":
		p.msgs = append(p.msgs, Msg{m, now})
		p.n++
		if p.n >= p.req.Batch {
			p.end(nil, now)
		}
		arrived = p.arrived
		if !p.ended && len(p.msgs) > 1 {
			// Next was woken by the first of these, and its pause timer
			// runs from them: a wake for each would only cost it a loop.
			return arrived
		}
	default:
		err := statusError(status, m.Header.Get("Description"))
		if errors.Is(err, jetstream.ErrBatchCompleted) && p.n < p.req.Batch {
			// A clustered consumer may send this status ahead of the
			// messages it counts. Ending the pull now would drop them, each
			// a delivery to no one until ack_wait passes.
			p.completing = true
			return nil
		}
		p.end(err, now)
	}
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return arrived
}

// Owing reports whether the server still owes the open pull what it has
// already sent it or answers at once: messages on their way to its handler
// (once it reports false, what came before the connection's last flush is
// recorded), or its end, when it is no_wait (the server answers one as
// soon as it looks, with what it had then). An ended pull owes nothing.
func (p *Pull) Owing() bool {
	n, _, err := p.sub.Pending() // the client counts a message until its handler returns
	if err != nil {
		return false // unsubscribed: ended
	}
	if n > 0 {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.req.NoWait && !p.ended
}

// OnMessage has f called (on the pull's subscription goroutine, with no
// lock held) for every message that arrives from now on: for whoever took
// the pull over after its caller stopped waiting for it.
func (p *Pull) OnMessage(f func()) {
	p.mu.Lock()
	p.arrived = f
	p.mu.Unlock()
}

// end closes the pull; p.mu is held.
func (p *Pull) end(err error, now time.Time) {
	p.ended, p.err, p.endedAt = true, err, now
	_ = p.sub.Unsubscribe()
	p.release()
}

// giveUpCompleting ends a completing pull whose missing messages have not
// come within completeGrace of the last that did; p.mu is held.
func (p *Pull) giveUpCompleting(now time.Time) {
	if !p.ended && p.completing && now.Sub(p.seen) > completeGrace {
		p.end(jetstream.ErrBatchCompleted, now)
	}
}

// silent reports whether the server has gone quiet on the open pull for
// longer than it may: three heartbeats, or past its expiry without them.
// p.mu is held.
func (p *Pull) silent(now time.Time) bool {
	if hb := p.req.Heartbeat; hb > 0 {
		return now.Sub(p.seen) > missedHeartbeats*hb
	}
	return now.Sub(p.sentAt) > p.req.Expires+LostGrace
}

// Next waits for messages of the pull and returns those not taken yet once
// the server pauses: none has come for gap, or the oldest has waited
// maxWait. So a burst goes on as one batch and a trickle goes on as it comes,
// rather than when the pull ends. ended reports that the pull is over, and
// err is then the status that ended it: nil when the batch was filled,
// jetstream.ErrNoMessages when it expired or had nothing, other statuses as
// status.go has them. If ctx ends first, or the server goes silent
// (jetstream.ErrNoHeartbeat), it returns at once with that error and ended
// false: the pull stays open, and what it still receives is for Take. When
// other fires while the pull has nothing (the caller has another source of
// messages), it returns nothing, with ended false and no error.
func (p *Pull) Next(ctx context.Context, gap, maxWait time.Duration, other <-chan struct{}) (msgs []Msg, ended bool, err error) {
	var check *time.Ticker
	var paused *time.Timer
	var due <-chan time.Time // paused's, while it is armed
	defer func() {
		if check != nil {
			check.Stop()
		}
		if paused != nil {
			paused.Stop()
		}
	}()
	for {
		p.mu.Lock()
		ready := p.ended
		if n := len(p.msgs); !ready && n > 0 && due == nil {
			// Armed once, not at every message: when it fires, a message
			// that came meanwhile arms it again for the rest of its gap.
			now := time.Now()
			left := min(gap-now.Sub(p.msgs[n-1].At), maxWait-now.Sub(p.msgs[0].At))
			if ready = left <= 0; !ready {
				if paused == nil {
					paused = time.NewTimer(left)
				} else {
					paused.Reset(left)
				}
				due = paused.C
			}
		}
		p.mu.Unlock()
		if ready {
			return p.takeAll()
		}
		if check == nil {
			check = time.NewTicker(min(MaxHeartbeat, p.req.Expires+LostGrace))
		}
		select {
		case <-p.wake:
		case <-due:
			due = nil
		case <-other:
			p.mu.Lock()
			idle := len(p.msgs) == 0 && !p.ended
			p.mu.Unlock()
			if idle {
				return nil, false, nil
			}
			other = nil // it has messages of its own: they come first
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case now := <-check.C:
			p.mu.Lock()
			p.giveUpCompleting(now)
			lost := !p.ended && !p.completing && p.silent(now)
			p.mu.Unlock()
			if lost {
				return nil, false, jetstream.ErrNoHeartbeat
			}
		}
	}
}

// takeAll takes the messages not taken yet, and the pull's end if it has
// ended.
func (p *Pull) takeAll() ([]Msg, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	msgs := p.msgs
	p.msgs = nil
	if !p.ended {
		return msgs, false, nil
	}
	return msgs, true, p.err
}

// Take returns the messages received and not yet taken, and whether the pull
// has ended and when. A pull the server has been silent on for longer than
// its expiry is ended here: the server is gone, and so is the pull.
func (p *Pull) Take(now time.Time) (msgs []Msg, ended bool, endedAt time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.giveUpCompleting(now)
	if !p.ended && !p.completing && now.Sub(p.sentAt) > p.req.Expires+LostGrace {
		p.end(jetstream.ErrNoHeartbeat, now)
	}
	msgs, p.msgs = p.msgs, nil
	return msgs, p.ended, p.endedAt
}
