package reliability

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
)

// StreamMode makes a Driver's workers consume with ConsumerService.Consume
// streams instead of Fetch loops. Each worker opens a stream through a
// random replica, records every batch in the Checker as a Fetch's (as the
// stream hands it over), answers it with the unary Ack/Nak/Term (the settle
// path of Fetch, Resend and all) and reads on. A stream that fails is
// opened again after Reopen.
type StreamMode struct {
	MaxMessages int
	Heartbeat   time.Duration
	// Reopen is the pause before a worker opens a new stream after one
	// ended with an error.
	Reopen time.Duration
	// End, if set, is asked as each stream opens whether its caller ends
	// it, and after how long. One that vanishes cancels it at once, its
	// unanswered messages abandoned (a caller that goes away); one that
	// does not reads no more, answers what it holds, then cancels it (a
	// caller that is done). ok false: the stream lives until it fails or
	// the run ends.
	End func(r *rand.Rand) (after time.Duration, vanish, ok bool)
}

// StreamRecord is one Consume stream as its caller saw it.
type StreamRecord struct {
	Opened, Ended time.Time // Ended is zero while it is open
	Code          codes.Code
	Err           string
	Vanished      bool // its caller went away (StreamMode.End)
	Closed        bool // its caller was done with it, or the run ended
	Messages      int
	FirstMessage  time.Time
	LastMessage   time.Time
	LastResponse  time.Time // messages or a heartbeat
	Abandoned     int       // messages left unanswered with it when its caller canceled it
}

// Failed reports whether the stream ended without its caller ending it.
func (s StreamRecord) Failed() bool { return !s.Ended.IsZero() && !s.Vanished && !s.Closed }

// streamLog records the streams and the return of what vanished callers
// abandoned. Its lock is taken after a callerStream's, never before.
type streamLog struct {
	mu       sync.Mutex
	records  []*StreamRecord
	awaiting map[string]time.Time // message id → when the caller it was left with canceled its stream
	returns  []time.Duration      // cancel → the next delivery of a message left with the stream
	seen     map[string]uint64    // message id → the last delivery count a caller saw
	unseen   int                  // deliveries no caller saw (a gap in a message's delivery counts)
	maxGap   uint64               // the most unseen deliveries in one gap
}

// StreamRecords returns a copy of every stream's record, in opening order.
func (d *Driver) StreamRecords() []StreamRecord {
	d.streams.mu.Lock()
	defer d.streams.mu.Unlock()
	out := make([]StreamRecord, len(d.streams.records))
	for i, r := range d.streams.records {
		out[i] = *r
	}
	return out
}

// Returns reports how long after a caller canceled its stream the
// messages left unanswered with it (held when it vanished, or handed over
// once it read no more) were delivered again, and how many have not been
// yet.
func (d *Driver) Returns() (took []time.Duration, waiting int) {
	d.streams.mu.Lock()
	defer d.streams.mu.Unlock()
	return append([]time.Duration(nil), d.streams.returns...), len(d.streams.awaiting)
}

// Unseen counts the deliveries that reached no caller, as gaps in the
// delivery counts of what the streams sent (read or not), and the largest
// gap: deliveries burned in pulls nobody waited on (DESIGN section 3),
// which max_deliver counts all the same.
func (d *Driver) Unseen() (deliveries int, maxGap uint64) {
	d.streams.mu.Lock()
	defer d.streams.mu.Unlock()
	return d.streams.unseen, d.streams.maxGap
}

// returned notes the deliveries of messages left with a canceled stream.
func (d *Driver) returned(ms []*jetgatev1.Message, at time.Time) {
	d.streams.mu.Lock()
	defer d.streams.mu.Unlock()
	for _, m := range ms {
		id := string(m.GetData())
		if since, ok := d.streams.awaiting[id]; ok {
			d.streams.returns = append(d.streams.returns, at.Sub(since))
			delete(d.streams.awaiting, id)
		}
	}
}

// reached notes the delivery counts of what a stream sent; streams.mu is
// held.
func (l *streamLog) reached(ms []*jetgatev1.Message) {
	if l.seen == nil {
		l.seen = make(map[string]uint64)
	}
	for _, m := range ms {
		id, n := string(m.GetData()), m.GetMetadata().GetNumDelivered()
		if last := l.seen[id]; n > last+1 {
			l.unseen += int(n - last - 1)
			l.maxGap = max(l.maxGap, n-last-1)
		}
		l.seen[id] = max(l.seen[id], n)
	}
}

// callerStream is the caller's side of one stream: what it holds, handed
// over but not answered yet, and whether it has gone.
type callerStream struct {
	rec    *StreamRecord
	log    *streamLog
	cancel context.CancelFunc

	mu       sync.Mutex
	held     map[string]bool
	unread   map[string]bool // handed over once its caller read no more
	gone     bool            // canceled by its caller: it reads and answers no more
	goneAt   time.Time
	ended    bool // the stream ended (its caller may still answer what it holds)
	vanished bool
	closing  bool // to be closed once it holds nothing
	closed   bool
}

// receive holds ms as the stream hands them over, unless the caller has
// gone or reads no more: then they are left to the gateway to give back.
func (s *callerStream) receive(ms []*jetgatev1.Message) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range ms {
		switch id := string(m.GetData()); {
		case s.gone:
			s.abandonLocked(map[string]bool{id: true})
		case s.closing:
			s.unread[id] = true
		default:
			s.held[id] = true
		}
	}
	return !s.gone && !s.closing
}

// abandonLocked notes ids as left with the stream when its caller canceled
// it, so that their next delivery is timed; s.mu is held.
func (s *callerStream) abandonLocked(ids map[string]bool) {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	if s.log.awaiting == nil {
		s.log.awaiting = make(map[string]time.Time)
	}
	for id := range ids {
		s.log.awaiting[id] = s.goneAt
	}
	s.rec.Abandoned += len(ids)
}

// here reports whether the caller is still there to work.
func (s *callerStream) here() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.gone
}

// answering lets go of ms as the caller answers them (or decides not to),
// unless it has gone.
func (s *callerStream) answering(ms []*jetgatev1.Message) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return false
	}
	for _, m := range ms {
		delete(s.held, string(m.GetData()))
	}
	return true
}

// close makes the caller read no more and cancel the stream once it holds
// nothing.
func (s *callerStream) close() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.closeIfDone()
}

// closeIfDone cancels the stream if its caller is done with it and holds
// nothing; what was handed over unread is left with it.
func (s *callerStream) closeIfDone() {
	s.mu.Lock()
	done := s.closing && !s.gone && !s.ended && len(s.held) == 0
	if done {
		s.gone, s.closed, s.goneAt = true, true, time.Now()
		s.abandonLocked(s.unread)
	}
	s.mu.Unlock()
	if done {
		s.cancel()
	}
}

// vanish cancels the stream at once: what the caller held is abandoned.
func (s *callerStream) vanish() {
	s.mu.Lock()
	if s.gone || s.ended {
		s.mu.Unlock()
		return
	}
	s.gone, s.vanished, s.goneAt = true, true, time.Now()
	s.abandonLocked(s.held)
	s.held = nil
	s.mu.Unlock()
	s.cancel()
}

func (d *Driver) streamWorker(ctx context.Context, r *rand.Rand, resends *sync.WaitGroup) {
	for ctx.Err() == nil {
		if d.consumeStream(ctx, r, resends) {
			backoff(ctx, d.Streaming.Reopen)
		}
	}
}

// consumeStream opens one stream and works it until it ends, and reports
// whether it failed (ended without its caller ending it).
func (d *Driver) consumeStream(ctx context.Context, r *rand.Rand, resends *sync.WaitGroup) (failed bool) {
	c := pick(r, d.consumers(), nil)
	if c == nil {
		backoff(ctx, 50*time.Millisecond)
		return false
	}
	sm := d.Streaming
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s := &callerStream{rec: &StreamRecord{Opened: time.Now()}, log: &d.streams, cancel: cancel,
		held: make(map[string]bool), unread: make(map[string]bool)}
	d.streams.mu.Lock()
	d.streams.records = append(d.streams.records, s.rec)
	d.streams.mu.Unlock()
	if sm.End != nil {
		if after, vanish, ok := sm.End(r); ok {
			t := time.AfterFunc(after, func() {
				if vanish {
					s.vanish()
				} else {
					s.close()
				}
			})
			defer t.Stop()
		}
	}
	st, err := c.Consume(sctx, &jetgatev1.ConsumeRequest{Stream: d.Stream, Consumer: d.Consumer,
		MaxMessages: int32(sm.MaxMessages), Heartbeat: durationpb.New(sm.Heartbeat)})
	if err != nil {
		return d.streamEnded(ctx, s, err, time.Now())
	}
	// The reader never waits on the worker for long: the stream holds at
	// most MaxMessages unanswered messages, so at most as many batches.
	batches := make(chan []*jetgatev1.Message, sm.MaxMessages+1)
	var end error
	var endedAt time.Time
	go func() {
		defer close(batches)
		for {
			resp, err := st.Recv()
			now := time.Now()
			if err != nil {
				end, endedAt = err, now
				s.mu.Lock()
				s.ended = true
				s.mu.Unlock()
				return
			}
			ms := resp.GetMessages()
			d.streams.mu.Lock()
			s.rec.LastResponse = now
			if len(ms) > 0 {
				if s.rec.FirstMessage.IsZero() {
					s.rec.FirstMessage = now
				}
				s.rec.LastMessage = now
			}
			s.rec.Messages += len(ms)
			d.streams.reached(ms)
			d.streams.mu.Unlock()
			if len(ms) == 0 {
				continue // a heartbeat
			}
			d.returned(ms, now)
			if !s.receive(ms) {
				continue // a caller that reads no more
			}
			// Delivered when the stream hands it over, as a Fetch's when it
			// returns, though the caller may get to it later.
			d.record(ms)
			select {
			case batches <- ms:
			case <-sctx.Done():
			}
		}
	}()
	for ms := range batches {
		if !s.here() {
			continue // the caller has gone
		}
		groups := d.decide(r, ms)
		if d.Hold != nil {
			backoff(sctx, d.Hold(r))
		}
		for a, group := range groups {
			if !s.answering(group) {
				break // it vanished while working on them
			}
			if a != NoAnswer {
				d.answer(ctx, r, a, group, resends)
			}
		}
		s.closeIfDone()
	}
	return d.streamEnded(ctx, s, end, endedAt)
}

// streamEnded records how a stream ended.
func (d *Driver) streamEnded(ctx context.Context, s *callerStream, err error, at time.Time) (failed bool) {
	s.mu.Lock()
	vanished, closed := s.vanished, s.closed || ctx.Err() != nil
	s.mu.Unlock()
	code := status.Code(err)
	if errors.Is(err, io.EOF) {
		code = codes.OK // the gateway ended it: a Consume never should
	}
	d.streams.mu.Lock()
	defer d.streams.mu.Unlock()
	s.rec.Ended, s.rec.Code, s.rec.Vanished, s.rec.Closed = at, code, vanished, closed
	if err != nil {
		s.rec.Err = err.Error()
	}
	return !vanished && !closed
}
