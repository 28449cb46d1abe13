package server

import (
	"fmt"
	"time"

	"google.golang.org/grpc"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/wire"
)

// Bounds of a Consume's heartbeat.
const (
	minHeartbeat = 100 * time.Millisecond
	maxHeartbeat = 5 * time.Minute
)

func (s *consumerService) Consume(req *jetgatev1.ConsumeRequest, out grpc.ServerStreamingServer[jetgatev1.ConsumeResponse]) error {
	cr, err := validateConsume(req, s.lim)
	if err != nil {
		return s.status(err)
	}
	ctx := out.Context()
	cr.Principal = auth.Principal(ctx)
	cr.Opened = func() { _ = out.SendHeader(nil) } // an error ends the stream at its first send
	pin := cr.Priority.PinID
	g := newStallGuard(out, s.lim.SendStall)
	defer g.close()
	err = s.replica.Consume(ctx, req.GetStream(), req.GetConsumer(), cr, func(ds []*consumer.Delivery) error {
		if len(ds) > 0 { // a heartbeat keeps it; messages without one: the policy is no longer pinned
			pin = consumer.PinOf(ds)
		}
		return g.send(&jetgatev1.ConsumeResponse{Messages: wire.Messages(ds), PinId: pin})
	})
	if err != nil {
		return s.status(err)
	}
	return nil
}

// validateConsume checks a Consume and applies its defaults.
func validateConsume(req *jetgatev1.ConsumeRequest, lim Limits) (consumer.ConsumeRequest, error) {
	if err := validateNames(req.GetStream(), req.GetConsumer()); err != nil {
		return consumer.ConsumeRequest{}, err
	}
	pri, err := validatePriority(req)
	if err != nil {
		return consumer.ConsumeRequest{}, err
	}
	cr := consumer.ConsumeRequest{MaxMessages: int(req.GetMaxMessages()), Heartbeat: consumer.DefaultConsumeHeartbeat, AutoExtend: req.GetAutoExtend(), Priority: pri, Silence: lim.Silence}
	switch {
	case cr.MaxMessages < 0:
		return cr, fmt.Errorf("%w: max_messages must not be negative", errs.ErrInvalidArgument)
	case cr.MaxMessages == 0:
		cr.MaxMessages = consumer.DefaultConsumeMessages
	case cr.MaxMessages > lim.MaxBatch:
		return cr, fmt.Errorf("%w: max_messages %d is above the maximum of %d (the gateway's limits.max_batch, --max-batch)", errs.ErrInvalidArgument, cr.MaxMessages, lim.MaxBatch)
	}
	if req.MaxBytes != nil {
		if req.GetMaxBytes() <= 0 {
			return cr, fmt.Errorf("%w: max_bytes must be positive when set", errs.ErrInvalidArgument)
		}
		cr.MaxBytes = req.GetMaxBytes()
	}
	if hb := req.GetHeartbeat(); hb != nil {
		if err := hb.CheckValid(); err != nil || hb.AsDuration() < minHeartbeat || hb.AsDuration() > maxHeartbeat {
			return cr, fmt.Errorf("%w: heartbeat must be a duration from %v to %v", errs.ErrInvalidArgument, minHeartbeat, maxHeartbeat)
		}
		cr.Heartbeat = hb.AsDuration()
	}
	// An idle stream asks the server once a heartbeat (at most every
	// idleWait), as a nats.go client's Consume does, not every second: its
	// pull waits for the first message until the heartbeat is due.
	cr.IdleWait = min(cr.Heartbeat, idleWait)
	return cr, nil
}

// idleWait bounds how long an idle stream's pull waits: one left open by a
// caller gone holds a place of the consumer's max_waiting until it ends.
const idleWait = 30 * time.Second

// DefaultSendStall is how long one response of a Consume stream may wait
// for its caller to read.
const DefaultSendStall = 30 * time.Second

// stallGuard sends a Consume stream's responses on a goroutine of its own,
// so that a caller that reads nothing for stall ends its stream (its leases
// go back) rather than hold it: gRPC's flow control bounds how much waits
// unsent, not for how long. The stream's end unblocks a Send left waiting.
type stallGuard struct {
	out   grpc.ServerStreamingServer[jetgatev1.ConsumeResponse]
	stall time.Duration
	timer *time.Timer // one for the stream, reset for each response
	req   chan *jetgatev1.ConsumeResponse
	res   chan error
}

func newStallGuard(out grpc.ServerStreamingServer[jetgatev1.ConsumeResponse], stall time.Duration) *stallGuard {
	g := &stallGuard{out: out, stall: stall, timer: time.NewTimer(stall),
		req: make(chan *jetgatev1.ConsumeResponse), res: make(chan error, 1)}
	g.timer.Stop()
	go func() {
		for m := range g.req {
			g.res <- g.out.Send(m)
		}
	}()
	return g
}

func (g *stallGuard) send(m *jetgatev1.ConsumeResponse) error {
	g.req <- m
	g.timer.Reset(g.stall)
	defer g.timer.Stop()
	select {
	case err := <-g.res:
		return err
	case <-g.timer.C:
		return fmt.Errorf("%w: the caller read nothing for %v", errs.CallerSilent, g.stall)
	}
}

func (g *stallGuard) close() { close(g.req) }
