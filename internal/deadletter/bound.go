package deadletter

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
)

// bound is the stream that binds a route's dead-letter subject, shared by
// the route's copies. The worker publishes its letters by subject, so an
// operator may delete that stream, or make one of another name on the
// subject, and the letters go there: Redrive, List and Count follow them
// (Route.current) rather than asking for the first stream until a restart.
type bound struct {
	mu sync.Mutex
	s  jetstream.Stream
}

func (b *bound) get() jetstream.Stream {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.s
}

func (b *bound) set(s jetstream.Stream) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.s = s
}

// Resolve finds the stream that binds r's dead-letter subject, once, for
// the worker, Redrive and Count to use. A subject no stream binds is an
// error naming the consumer and the subject.
func Resolve(ctx context.Context, js jetstream.JetStream, r Route) (Route, error) {
	name, err := js.StreamNameBySubject(ctx, r.Subject)
	if err != nil {
		return r, fmt.Errorf("stream %q consumer %q: dead_letter.subject %q is bound to no stream: configure a stream with that subject: %w",
			r.Stream, r.Consumer, r.Subject, err)
	}
	s, err := js.Stream(ctx, name)
	if err != nil {
		return r, fmt.Errorf("stream %q consumer %q: dead-letter stream %q: %w", r.Stream, r.Consumer, name, err)
	}
	r.dead = &bound{s: s}
	return r, nil
}

// resolved is r with its dead-letter stream, looked up if Resolve has not.
func resolved(ctx context.Context, js jetstream.JetStream, r Route) (Route, error) {
	if r.dead != nil {
		return r, nil
	}
	return Resolve(ctx, js, r)
}

// current is the stream that binds r's subject now, and its info with the
// subject's count: one request while it is the stream found before. One
// that is gone is looked up again by the subject; with none there, the
// error is errs.ErrDeadLetterStreamNotFound (the worker's letters wait).
func (r Route) current(ctx context.Context, js jetstream.JetStream) (jetstream.Stream, *jetstream.StreamInfo, error) {
	if r.dead == nil {
		r.dead = &bound{}
	}
	if s := r.dead.get(); s != nil {
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(r.Subject))
		if !errors.Is(err, jetstream.ErrStreamNotFound) {
			return s, info, err
		}
	}
	gone := func() error {
		return fmt.Errorf("%w: no stream has dead_letter.subject %q of consumer %q of stream %q (deleted?): make one with that subject, and the dead letters waiting meanwhile are stored there",
			errs.ErrDeadLetterStreamNotFound, r.Subject, r.Consumer, r.Stream)
	}
	name, err := js.StreamNameBySubject(ctx, r.Subject)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil, gone()
	}
	if err != nil {
		return nil, nil, err
	}
	s, err := js.Stream(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(r.Subject))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil, gone()
	}
	if err != nil {
		return nil, nil, err
	}
	r.dead.set(s)
	return s, info, nil
}

// currentOr is current with an error other than ErrDeadLetterStreamNotFound
// marked errs.ErrUnavailable, saying what failed.
func (r Route) currentOr(ctx context.Context, js jetstream.JetStream, what string) (jetstream.Stream, *jetstream.StreamInfo, error) {
	s, info, err := r.current(ctx, js)
	if err != nil && !errors.Is(err, errs.ErrDeadLetterStreamNotFound) {
		return nil, nil, fmt.Errorf("%w: %s: %v", errs.ErrUnavailable, what, err)
	}
	return s, info, err
}
