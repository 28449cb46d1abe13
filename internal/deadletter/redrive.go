package deadletter

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
)

// MaxRedrive is the most dead letters one Redrive of "all" puts back, and
// the most failures it lists; a caller with more calls again. It reads at
// most maxRedriveScan of the consumer's letters.
const MaxRedrive = 1000

// maxRedriveScan bounds the letters one Redrive of "all" reads: letters that
// stay (their message gone, their subject refused) are read past, so that
// they never hold back those behind them, but not without end.
const maxRedriveScan = 10 * MaxRedrive

// Failure is a dead letter that was not redriven, and why.
type Failure struct {
	Seq uint64
	Err error
}

// Target checks a dead letter's original subject before Redrive publishes
// to it: a letter is only data any NATS client may have stored on the
// dead-letter subject, so its subject must pass what a Publish to the
// consumer's own stream passes.
type Target func(ctx context.Context, subject string) error

// Publish republishes a letter, as jetstream.JetStream's PublishMsg does. A
// replica's ends at once, with an error wrapping errs.ErrPublishRefused,
// when the server refuses jetgate's own NATS user the subject: a refusal
// the server answers no request with.
type Publish func(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error)

// Redrive republishes r's dead letters — those at seqs in the dead-letter
// stream, or all of them (oldest first, at most MaxRedrive) — to their
// original subjects, and removes each from the dead-letter stream once its
// republish is confirmed. A letter whose subject target refuses stays, a
// failure of its own; "all" goes on past it, and passes over other
// consumers' letters on a shared subject. A republish carries a Nats-Msg-Id
// of its own, so a retry after a failed removal is not stored twice. Each
// letter is republished by publish.
func Redrive(ctx context.Context, js jetstream.JetStream, r Route, seqs []uint64, target Target, publish Publish) (int, []Failure, error) {
	s, info, err := r.currentOr(ctx, js, "read dead letters")
	if err != nil {
		return 0, nil, err
	}
	name := info.Config.Name
	if info.Config.DenyDelete || info.Config.Sealed {
		// A letter put back would stay, and be put back again by every
		// Redrive past the duplicate window.
		return 0, nil, fmt.Errorf("%w: %q has deny_delete or is sealed: a letter put back could not be removed from it, so none is put back",
			errs.ErrDeadLetterStreamDeniesDelete, name)
	}
	redriven := 0
	var fails []Failure
	one := func(m *jetstream.RawStreamMsg, seq uint64) {
		switch err := redriveOne(ctx, publish, s, name, r, m, seq, target); {
		case err == nil:
			redriven++
		case !errors.Is(err, errRemovedMeanwhile):
			fails = append(fails, Failure{seq, err})
		}
	}
	if len(seqs) > 0 {
		named := make(map[uint64]bool, len(seqs))
		for _, seq := range seqs {
			if named[seq] { // named twice: put back once, as a settle of a token named twice
				continue
			}
			named[seq] = true
			m, err := s.GetMsg(ctx, seq)
			switch {
			case errors.Is(err, jetstream.ErrMsgNotFound):
				fails = append(fails, Failure{seq, fmt.Errorf("%w: no message %d in dead-letter stream %q", errs.ErrDeadLetterNotFound, seq, name)})
			case err != nil:
				fails = append(fails, Failure{seq, fmt.Errorf("%w: read dead letter: %v", errs.ErrUnavailable, err)})
			default:
				one(m, seq)
			}
		}
		return redriven, fails, nil
	}
	for next, n := uint64(1), 0; redriven < MaxRedrive && n < maxRedriveScan; n++ {
		m, err := s.GetMsg(ctx, next, jetstream.WithGetMsgSubject(r.Subject))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			break
		}
		if err != nil {
			return redriven, fails, fmt.Errorf("%w: list dead letters: %v", errs.ErrUnavailable, err)
		}
		next = m.Sequence + 1
		if m.Header.Get(HeaderStream) != r.Stream || m.Header.Get(HeaderConsumer) != r.Consumer {
			continue // another consumer's, on a shared subject
		}
		switch err := redriveOne(ctx, publish, s, name, r, m, m.Sequence, target); {
		case err == nil:
			redriven++
		case errors.Is(err, errRemovedMeanwhile):
		case len(fails) < MaxRedrive: // those beyond are not listed
			fails = append(fails, Failure{m.Sequence, err})
		}
	}
	return redriven, fails, nil
}

func redriveOne(ctx context.Context, publish Publish, s jetstream.Stream, name string, r Route, m *jetstream.RawStreamMsg, seq uint64, target Target) error {
	if m.Subject != r.Subject || m.Header.Get(HeaderStream) != r.Stream || m.Header.Get(HeaderConsumer) != r.Consumer {
		return fmt.Errorf("%w: message %d of stream %q is not a dead letter of consumer %q of stream %q", errs.ErrDeadLetterNotFound, seq, name, r.Consumer, r.Stream)
	}
	subject := m.Header.Get(HeaderSubject)
	if subject == "" {
		return fmt.Errorf("%w: dead letter %d has no original message to put back (it had left its stream)", errs.ErrDeadLetterNotFound, seq)
	}
	if err := target(ctx, subject); err != nil {
		return fmt.Errorf("dead letter %d stays: its %s names a subject a redrive may not publish to: %w", seq, HeaderSubject, err)
	}
	out := &nats.Msg{Subject: subject, Data: m.Data, Header: nats.Header{}}
	for k, vs := range m.Header {
		if !reservedHeader(k) && !deadHeader(k) {
			out.Header[k] = vs
		}
	}
	// A redrive of the same letter twice (two replicas at once) stores it
	// once. The letter's stored time is in the id: a dead-letter stream made
	// again numbers its letters from 1 again, and another letter of the
	// same sequence must not be taken for a duplicate, and deleted unstored.
	id := "jetgate-redrive:" + name + ":" + strconv.FormatUint(seq, 10) + ":" + strconv.FormatInt(m.Time.UnixNano(), 10)
	if _, err := publish(ctx, out, jetstream.WithMsgID(id), jetstream.WithExpectStream(r.Stream)); err != nil {
		var apiErr *jetstream.APIError
		switch {
		case errors.As(err, &apiErr):
			return fmt.Errorf("%w: stream refused the redrive of dead letter %d to %q: %s", errs.ErrPublishRefused, seq, subject, apiErr.Description)
		case errors.Is(err, errs.ErrPublishRefused): // by NATS, for jetgate's user: it says so
			return fmt.Errorf("dead letter %d stays: %w", seq, err)
		}
		return fmt.Errorf("%w: republish dead letter %d: %v", errs.ErrUnavailable, seq, err)
	}
	if err := s.DeleteMsg(ctx, seq); err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) || gone(ctx, s, seq) {
			return errRemovedMeanwhile
		}
		return fmt.Errorf("%w: dead letter %d was republished but not removed; redrive it again: %v", errs.ErrUnavailable, seq, err)
	}
	return nil
}

// errRemovedMeanwhile is a letter another Redrive removed while this one put
// it back (two replicas at once): it is back in its stream once (the
// message id), and counted by the Redrive that removed it, not a failure of
// this one.
var errRemovedMeanwhile = errors.New("removed by another redrive meanwhile")

// gone reports whether the letter at seq has left its stream: a delete that
// failed may have found it removed already (another Redrive of it at once;
// the server then answers "no message found" under another code than
// ErrMsgNotFound's).
func gone(ctx context.Context, s jetstream.Stream, seq uint64) bool {
	_, err := s.GetMsg(ctx, seq)
	return errors.Is(err, jetstream.ErrMsgNotFound)
}

// Count is how many dead letters wait on r's subject: one request while
// its stream is the one found before (Route.current).
func Count(ctx context.Context, js jetstream.JetStream, r Route) (int64, error) {
	_, info, err := r.current(ctx, js)
	if err != nil {
		return 0, err
	}
	return int64(info.State.Subjects[r.Subject]), nil
}
