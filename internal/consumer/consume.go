package consumer

import (
	"cmp"
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/pull"
)

// errEnding ends a caller's stream as the gateway begins to stop
// (ConsumeRequest.Ending).
var errEnding = fmt.Errorf("%w: reconnect, and settle what the stream handed out through any replica", errs.ErrStopping)

// outlastMax bounds the wait between two pulls of a stream that outlasts
// NATS going away; extendAwayWait is the least wait between two tries to
// extend its leases meanwhile (extendUntil's: the stream's loop leaves them
// to it then).
const (
	outlastMax     = 2 * time.Second
	extendAwayWait = 100 * time.Millisecond
)

// Consume leases messages to send as they come, never holding more than
// req.MaxMessages (and req.MaxBytes) unsettled leases at once, one more
// while its reader is starved with no room left (req.Starved): it pulls for
// the room it has, and again once half of it is free, as async-nats does
// (at once while starved), and sends a pull's messages while the pull is
// still open. An idle
// stream sends an empty batch every req.Heartbeat. With req.AutoExtend its
// leases are extended (+WPI) before their deadlines, up to the maximum lease
// time. When ctx ends or send fails, every lease it still holds is nak'ed
// back at once, once the pull it left open (if any) has ended, so that they
// are redelivered in milliseconds rather than after ack_wait.
func (pl *puller) Consume(ctx context.Context, req ConsumeRequest, send func([]*Delivery) error) error {
	pri, err := checkPriority(ctx, pl.server, req.Priority)
	if err != nil {
		return err
	}
	k := &consumeStream{pl: pl, o: lease.NewOwner(), send: send, lastSend: time.Now(), pin: pri.PinID, claimed: make(chan struct{}, 1), batch: req.MaxMessages, principal: req.Principal, dry: true}
	k.hungry, k.ending, k.pulled = req.Hungry, req.Ending, time.Now()
	var last *pull.Pull // the pull the stream left open, to the orphan pool
	defer func() {
		k.end(k.sendFailed || ctx.Err() != nil, last, req.KeepOnEnd, req.AutoExtend && closed(req.Ending))
	}()
	if req.AutoExtend {
		defer k.extendAlongside(ctx, req.Principal, cmp.Or(req.MaxLease, pl.maxLease))() // before end, which runs last
	}
	var away time.Duration // how long the stream waits before it pulls again while NATS is away (Outlast)
	regrouped := false     // the stream took its priority and limits again once, after the server refused a pull
	for {
		if err := cmp.Or(ctx.Err(), pl.server.servable(), deletedNow(ctx, pl.server)); err != nil {
			return err
		}
		if closed(req.Ending) {
			return errEnding
		}
		if req.Opened != nil {
			req.Opened()
			req.Opened = nil
		}
		now := time.Now()
		pl.leases.Sweep(now) // leases past their deadline give their room back
		// While NATS is away, extendUntil alone extends, at most every
		// extendAwayWait. Back, the stream extends every lease it holds
		// before it pulls again, once caught up (a reconnect cuts the
		// leases): a server that restarted dates its pending messages to
		// the second, and hands one it finds due to the next pull.
		if req.AutoExtend && (away == 0 || pl.nc.IsConnected()) && pl.caughtUp(ctx) {
			k.extend(ctx, req.Principal, cmp.Or(req.MaxLease, pl.maxLease), now, away != 0)
		}
		if err := k.silent(req.Silence, now); err != nil {
			return err
		}
		untilBeat := k.lastSend.Add(req.Heartbeat).Sub(now)
		if untilBeat <= 0 {
			if err := k.deliver(nil); err != nil {
				return err
			}
			continue
		}
		wait := min(untilBeat, k.untilNextDue(req.AutoExtend, cmp.Or(req.MaxLease, pl.maxLease), now), k.longest(&req), max(k.untilPinKept(now), time.Millisecond))
		if lim, n, due := k.nextPull(ctx, &req, pri, wait); due {
			empty, left, err := k.pullLoop(ctx, lim, k.idle(n, &req))
			last = cmp.Or(left, last)
			if req.outlasts(ctx, err) {
				away = min(max(2*away, 50*time.Millisecond), outlastMax)
				k.waitForRoom(ctx, away) // or a lease leaving, for the room of the next pull
				continue
			}
			away, regrouped = 0, regrouped && err != nil
			switch {
			case err != nil && (groupsRefused(err) || limitsRefused(err)) && !regrouped:
				regrouped = true
				if pri, err = k.regroup(ctx, req.Priority); err != nil {
					return err
				}
				continue
			case err != nil:
				return err
			case empty != EmptyMaxBytes:
				continue
			case n == 0:
				// The next message does not fit in the bytes left, and
				// holding nothing, the stream will never have more room.
				return k.tooLarge(&req)
			}
		}
		k.waitForRoom(ctx, wait)
	}
}

// tooLarge is the error of a stream that holds nothing and whose next
// message is larger than its pulls may ask for: the consumer's
// max_request_max_bytes where that is the tighter bound (no max_bytes of
// the stream's would help), else the stream's max_bytes. Both count a
// message as NATS does.
func (k *consumeStream) tooLarge(req *ConsumeRequest) error {
	if c := requestLimits(k.pl.server).maxBytes; c > 0 && (req.MaxBytes == 0 || c < req.MaxBytes) {
		return overConsumersBytes(c)
	}
	return fmt.Errorf("%w: the next message, %s, is larger than the stream's max_bytes (%d); open the stream with a larger max_bytes to receive it",
		errs.ErrMessageTooLarge, countedAsNATS, req.MaxBytes)
}

// countedAsNATS says how a message's size is counted against a pull's
// max_bytes.
const countedAsNATS = "as NATS counts it (its subject, ack subject, headers and data)"

// overConsumersBytes is a message larger than the consumer's
// max_request_max_bytes (most): no caller receives it until an operator
// raises that limit.
func overConsumersBytes(most int64) error {
	return fmt.Errorf("%w: the next message, %s, is larger than the consumer's max_request_max_bytes (%d); raise that limit of the consumer to receive it",
		errs.ErrMessageTooLarge, countedAsNATS, most)
}

// nextPull is the stream's next pull, for the room it has (n leases held),
// within wait, and whether to send it now: holding nothing, once half its
// room is free, or while its reader is starved (req.Starved), then for one
// over its room where it has none: the reader's probe.
func (k *consumeStream) nextPull(ctx context.Context, req *ConsumeRequest, pri pull.Priority, wait time.Duration) (lim pullLimits, n int, due bool) {
	n, bytes := k.pl.leases.Load(k.o)
	room, starved := req.MaxMessages-n, req.Starved != nil && req.Starved()
	if starved && room == 0 {
		room = 1
	}
	lim = k.pl.limits(ctx, room, 0, wait, req.Principal)
	lim.priority, lim.priority.PinID = pri, k.pin // the stream keeps the pin it was given
	lim.gap, lim.linger = consumeGap, consumeMaxLinger
	if req.MaxBytes > 0 {
		lim.maxBytes = min(lim.maxBytes, req.MaxBytes-bytes)
	}
	if k.idle(n, req) {
		lim.waitBatch, lim.inLine = 1, true // an idle pull ends with the first message (longest)
	}
	due = (n == 0 || lim.batch*2 >= req.MaxMessages || starved && lim.batch > 0) && lim.maxBytes > 0
	if !due && k.untilPinKept(time.Now()) <= 0 {
		// A stream that pulls nothing, its room taken, keeps its pin with a
		// pull that can take nothing (one byte): the server renews a pin as
		// a pull carrying it arrives, and drops one that none carries for
		// priority_timeout (a reviewer's finding: a job longer than that
		// lost the stream its pin).
		lim.batch, lim.waitBatch, lim.maxBytes, lim.inLine, due = 1, 1, 1, false, true
		lim.until = time.Now().Add(pull.ImmediateExpiry)
	}
	return lim, n, due && !closed(req.Stop)
}

// untilPinKept is how long until the stream's next pull is due to keep its
// pin: half its group's priority_timeout after its last pull; an hour where
// it holds no pin of a pinned group.
func (k *consumeStream) untilPinKept(now time.Time) time.Duration {
	v := k.pl.server.view()
	if k.pin == "" || v.policy != jetstream.PriorityPolicyPinned || v.pinTTL <= 0 {
		return time.Hour
	}
	return k.pulled.Add(v.pinTTL / 2).Sub(now)
}

// pullLoop runs the puller's loop for the stream, counted among the idle
// pulls while the stream holds nothing (and may wait IdleWait).
func (k *consumeStream) pullLoop(ctx context.Context, lim pullLimits, idle bool) (empty EmptyReason, left *pull.Pull, err error) {
	k.pulled, k.dry = time.Now(), true
	defer func() { k.dry = k.dry && err == nil }() // take clears it
	if idle {
		k.pl.idle.Add(1)
		defer k.pl.idle.Add(-1)
	}
	if !idle || k.ending == nil {
		return k.pl.pullLoop(ctx, lim, k)
	}
	// The gateway's stop ends the stream at once (errEnding), its idle pull
	// (a heartbeat long) left to the orphan pool.
	pctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		select {
		case <-k.ending:
			cancel()
		case <-done:
		}
	}()
	defer func() { close(done); cancel() }()
	empty, left, err = k.pl.pullLoop(pctx, lim, k)
	if err != nil && closed(k.ending) && ctx.Err() == nil {
		err = errEnding
	}
	return empty, left, err
}

// idle reports whether the stream's next pull is an idle one (IdleWait):
// it holds nothing (n leases), and its last pull found nothing to take. A
// stream that has just settled all it held pulls for its room first: one
// in line for a single message would cut a busy stream's throughput.
func (k *consumeStream) idle(n int, req *ConsumeRequest) bool {
	return n == 0 && req.IdleWait > 0 && k.dry
}

// longest is how long the stream's next pull may wait. A pull lasts at
// most consumeMaxWait, for when the stream ends its leases wait for its
// last pull to end before they are nak'ed; but one of a stream that holds
// none may wait req.IdleWait, in line for one message (nextPull), so that
// it ends with the first and what follows is pulled as before: an idle
// pusher asks the server once in that long. A pinned group's pin lapses
// when no pull carries it for priority_timeout: half of it at most then.
func (k *consumeStream) longest(req *ConsumeRequest) time.Duration {
	n, _ := k.pl.leases.Load(k.o)
	if !k.idle(n, req) || req.IdleWait <= consumeMaxWait {
		return consumeMaxWait
	}
	if v := k.pl.server.view(); v.policy == jetstream.PriorityPolicyPinned && v.pinTTL > 0 {
		return max(min(req.IdleWait, v.pinTTL/2), consumeMaxWait)
	}
	return req.IdleWait
}

// regroup takes the stream's priority again from what the server says, once
// it refused a pull for groups or limits an operator changed under the
// stream (as Fetch does): the next pull is bounded by the limits the info
// says; a pin goes when the policy is no longer pinned_client.
func (k *consumeStream) regroup(ctx context.Context, asked pull.Priority) (pull.Priority, error) {
	s := k.pl.server
	if _, err := s.ask(ctx, s.timeout); err != nil {
		return pull.Priority{}, err
	}
	v := s.view()
	if v.policy != jetstream.PriorityPolicyPinned {
		k.pin = ""
	}
	return v.priority(s.name, asked)
}

// consumeStream is one Consume: the sink of its pulls, which passes its
// leases on as they come, and what it holds.
type consumeStream struct {
	pl         *puller
	o          *lease.Owner // the leases the stream holds, in the lease table
	send       func([]*Delivery) error
	lastSend   time.Time
	sendFailed bool   // the caller is gone
	pin        string // pinned_client: the pin the stream holds
	batch      int    // its max_messages: the most one of its pulls brings (fit)
	principal  string // whose tokens it hands out
	// claimed tells auto_extend (extendUntil) of leases the stream took.
	claimed chan struct{}
	hungry  <-chan struct{} // ConsumeRequest.Hungry
	ending  <-chan struct{} // ConsumeRequest.Ending
	pulled  time.Time       // when its last pull went out (untilPinKept)
	dry     bool            // its last pull took nothing (idle)
}

// take holds the leases for the stream and sends them; the stream reads its
// pull to the end.
func (k *consumeStream) take(_ context.Context, ds []*Delivery, _ bool) (bool, error) {
	k.dry = false
	rs, sizes := make([]lease.Ref, len(ds)), make([]int64, len(ds))
	for i, d := range ds {
		rs[i], sizes[i] = ref(k.pl.tokens.claims(d)), d.size()
	}
	k.pl.leases.Claim(k.o, rs, sizes, time.Now())
	select {
	case k.claimed <- struct{}{}:
	default: // told already
	}
	k.pl.counts.Fetched.Add(uint64(len(ds)))
	if pin := PinOf(ds); pin != "" {
		k.pin = pin
	}
	for len(ds) > 0 { // in responses a default client reads (response.go)
		var burst []*Delivery
		burst, ds = fit(ds, k.pl.maxFetchBytes, k.batch)
		// Dated as each goes: a send waits for its reader (up to the
		// stall guard's 30s), and a lease may be cut meanwhile.
		if err := k.deliver(k.pl.tokens.dated(burst, k.principal)); err != nil {
			return false, err
		}
	}
	return false, nil
}

// deliver sends ds (none: a heartbeat) to the caller.
func (k *consumeStream) deliver(ds []*Delivery) error {
	if err := k.send(ds); err != nil {
		k.sendFailed = true
		return err
	}
	k.lastSend = time.Now()
	return nil
}

// Deleted follows the server's word that the consumer was deleted (its
// advisory): a Consume stream at its max_messages, with no pull open to
// learn it from, asks the server and ends NOT_FOUND, rather than wait out
// its leases (deletedNow). Its leases are void, as a reset
// voids them: a settle of one would land on the delivery of the same
// message by the consumer made again under its name.
func (c *Consumer) Deleted() { markDeleted(c.onServer, "the consumer was deleted on the server") }

// waitForRoom waits up to d for a settle to give credit back, or the
// stream's reader to starve.
func (k *consumeStream) waitForRoom(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-k.o.Left():
	case <-k.hungry:
	case <-k.ending:
	case <-t.C:
	}
}
