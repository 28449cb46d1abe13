package consumer

import (
	"context"
	"errors"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/pull"
)

// Defaults of a Consume.
const (
	DefaultConsumeMessages  = 200
	DefaultConsumeHeartbeat = 15 * time.Second
	// DefaultMaxLease is how long auto_extend keeps one lease alive.
	DefaultMaxLease = time.Hour
	// A Consume stream sends the messages of a pull that is still open (the
	// consumer is at max_ack_pending, and settles let messages through one
	// by one) once the server pauses for consumeGap, or the oldest has
	// waited consumeMaxLinger: a burst goes as one response, not one
	// response (and one Ack) a message.
	consumeGap       = time.Millisecond
	consumeMaxLinger = 5 * time.Millisecond
)

// consumeMaxWait bounds one pull of a Consume (a variable for tests).
var consumeMaxWait = time.Second

// ConsumeRequest is a validated Consume.
type ConsumeRequest struct {
	MaxMessages int
	MaxBytes    int64 // 0: no limit but the Fetch bound
	Heartbeat   time.Duration
	AutoExtend  bool
	// MaxLease bounds how long auto_extend keeps one lease; 0 is the
	// consumer's (Deps.MaxLease).
	MaxLease  time.Duration
	Priority  pull.Priority // of a consumer with priority groups
	Principal string
	// Stop, when closed, ends the pulling: the stream still extends and
	// gives back what it holds, until ctx ends.
	Stop <-chan struct{}
	// Ending, when closed (the gateway begins to stop), ends the stream
	// UNAVAILABLE once its pull in flight has ended: its leases stay its
	// caller's, to settle through another replica or this one started
	// again, as when NATS goes away.
	Ending <-chan struct{}
	// Silence, if set, ends a stream whose caller is silent (silent), and
	// gives its leases back: over REST, where the kernel's buffers take the
	// stream's writes, a caller that stops reading cannot be told apart
	// otherwise.
	Silence time.Duration
	// KeepOnEnd is how long the replica keeps the stream's leases alive
	// after a stream that ends without its caller leaving (NATS went away,
	// unless Outlast; the consumer refused): a pusher's requests in flight
	// run on. 0: until their deadlines (a gRPC caller extends its own).
	KeepOnEnd time.Duration
	// Outlast keeps the stream through NATS going away: a pull that fails
	// for it (UNAVAILABLE) is made again once NATS is back, and the
	// stream's leases stay its own meanwhile, extended as they come due
	// (those NATS was away too long for lapse), rather than let go with
	// the stream: a pusher's held-back messages would otherwise each lose
	// a delivery to every NATS blip.
	Outlast bool
	// Unavailable, if set, is told of each pull of an Outlast stream that
	// failed UNAVAILABLE, before the stream pulls again: NATS away, or
	// connected and its JetStream not answering, which a pusher has no
	// caller to tell of.
	Unavailable func(error)
	// Starved, if set, reports whether the stream's reader has nothing to
	// do but wait on the leases it holds: a pusher whose every lease failed
	// and waits for a verdict only another message's push can give (does
	// the endpoint fail them all, or do they fail on their own?). The
	// stream then pulls for whatever room it has, half of MaxMessages or
	// not, and, with none left, for one message over MaxMessages: its
	// reader's probe. A value on Hungry has the stream ask Starved at once.
	Starved func() bool
	Hungry  <-chan struct{}
	// IdleWait, if longer than a second, is how long a pull may wait while
	// the stream holds no lease (a pusher's: an idle one asks the server
	// once in that long, not every second); 0: a second.
	IdleWait time.Duration
	// Opened, if set, is called once the stream is open (its consumer
	// servable), before its first pull: the gRPC face sends the stream's
	// headers then, so that a caller (a REST one above all) hears that it is
	// open without waiting for a first message or heartbeat.
	Opened func()
}

// closed reports whether ch (nil: never) is closed.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// outlasts reports whether an Outlast stream pulls again after its pull
// failed with err (UNAVAILABLE), and tells Unavailable of it.
func (req *ConsumeRequest) outlasts(ctx context.Context, err error) bool {
	if err == nil || !req.Outlast || !errors.Is(err, errs.ErrUnavailable) || ctx.Err() != nil {
		return false
	}
	if req.Unavailable != nil {
		req.Unavailable(err)
	}
	return true
}
