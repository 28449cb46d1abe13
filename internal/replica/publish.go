package replica

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natsname"
	"github.com/jetgate/jetgate/internal/tracing"
)

// publisher publishes to the streams a replica serves.
type publisher struct {
	*env
	subjects *streamSubjects   // each stream's subjects, to check a Publish's
	admin    *consumer.Admin   // its streams are served too; nil: none
	onDemand consumer.OnDemand // and so are the streams its patterns name
	waits    publishWaits      // ended by the server's refusal of a subject
}

// PublishRequest is a validated Publish.
type PublishRequest struct {
	Stream  string
	Subject string
	Data    []byte
	Header  nats.Header
	MsgID   string
	TTL     time.Duration // the message's own time to live; 0: the stream's
}

// PubAck is JetStream's acknowledgement of a publish.
type PubAck struct {
	Stream    string
	Seq       uint64
	Duplicate bool
}

// Publish stores a message in one of the streams the gateway serves. The
// subject must be one of the stream's own and must not start with $.
func (pb *publisher) Publish(ctx context.Context, req PublishRequest) (_ PubAck, err error) {
	ctx, span := pb.spans.Publish(ctx, req.Stream, req.Subject, 1)
	defer func() { span.End(err) }()
	m, err := pb.message(ctx, req, span != nil)
	if err != nil {
		return PubAck{}, err
	}
	pctx, cancel := context.WithTimeout(ctx, pb.timeout)
	defer cancel()
	pctx, done := pb.waits.wait(pctx, m.Subject)
	defer done()
	ack, err := pb.js.PublishMsg(pctx, m)
	if err != nil {
		return PubAck{}, pb.publishError(ctx, req.Stream, m, refusal(pctx, err))
	}
	span.MessageID(ack.Stream, ack.Sequence)
	return PubAck{Stream: ack.Stream, Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// message checks what the server would refuse of req (or take as a
// protocol violation) and builds its message; traced, with ctx's trace
// context in its headers unless the caller gave one.
func (pb *publisher) message(ctx context.Context, req PublishRequest, traced bool) (*nats.Msg, error) {
	if err := pb.publishTarget(ctx, req.Stream, req.Subject); err != nil {
		return nil, err
	}
	// No Nats-Expected-Stream header: the subject was checked against the
	// stream's own (which no other stream may share), and the header would be
	// stored with the message and handed back to every consumer.
	m := &nats.Msg{Subject: req.Subject, Data: req.Data, Header: req.Header}
	if m.Header == nil && (req.MsgID != "" || req.TTL > 0 || traced) {
		m.Header = nats.Header{}
	}
	if traced {
		tracing.Inject(ctx, m.Header)
	}
	if req.MsgID != "" {
		m.Header.Set(jetstream.MsgIDHeader, req.MsgID)
	}
	if req.TTL > 0 {
		m.Header.Set(jetstream.MsgTTLHeader, req.TTL.String())
	}
	return m, pb.fitsPayload(m)
}

// publishTarget checks that subject is one a caller may publish to in
// stream: literal, not $-reserved, bound to the stream. Publish and Redrive
// share it.
func (pb *publisher) publishTarget(ctx context.Context, stream, subject string) error {
	if err := validSubject(subject); err != nil {
		return err
	}
	err := pb.subjects.allows(ctx, stream, subject)
	served := pb.admin.StreamAllowed(stream) || pb.onDemand.StreamMatches(stream)
	if errors.Is(err, errs.ErrStreamNotFound) && served && !natsname.Internal(stream) {
		// A stream of self-service consumers, or of consumers on demand, is
		// served, whether or not the file names a consumer of it: its
		// subjects are looked up once. One that does not exist is
		// STREAM_NOT_FOUND, as any other.
		switch lerr := pb.subjects.load(ctx, stream); {
		case lerr == nil:
			return pb.subjects.allows(ctx, stream, subject)
		case ctx.Err() != nil:
			return ctx.Err() // the caller's own end, not NATS's
		case !errors.Is(lerr, jetstream.ErrStreamNotFound):
			return fmt.Errorf("%w: %v", errs.ErrUnavailable, lerr)
		}
	}
	return err
}

// publishError maps what a publish of m to stream failed with.
func (pb *publisher) publishError(ctx context.Context, stream string, m *nats.Msg, err error) error {
	var apiErr *jetstream.APIError
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrMessageTTLDisabled:
		return fmt.Errorf("%w: stream %q does not take a message's own ttl (its allow_msg_ttl is off); nothing was stored", errs.ErrTTLNotAllowed, stream)
	case errors.As(err, &apiErr) && apiErr.ErrorCode == jetstreamext.JSErrCodeBatchPublishNotEnabled:
		return fmt.Errorf("%w: stream %q does not take atomic batches (its allow_atomic is off); nothing was stored", errs.ErrBatchNotAllowed, stream)
	case errors.As(err, &apiErr):
		return fmt.Errorf("%w: stream %q refused the message: %s", errs.ErrPublishRefused, stream, apiErr.Description)
	case errors.Is(err, nats.ErrMaxPayload):
		// The connection moved to a server with a smaller max_payload.
		if perr := pb.fitsPayload(m); perr != nil {
			return perr
		}
		return fmt.Errorf("%w: the message is larger than the NATS server's max_payload (%d bytes)", errs.ErrPayloadTooLarge, pb.nc.MaxPayload())
	}
	if derr := pb.denied(m.Subject, err); derr != nil {
		return derr
	}
	return fmt.Errorf("%w: publish: %v", errs.ErrUnavailable, err)
}

// jsErrMessageTTLDisabled is the server's error code for a message ttl on a
// stream without allow_msg_ttl (JSMessageTTLDisabledErr).
const jsErrMessageTTLDisabled = 10166

// The NATS server closes a connection that sends a protocol line longer than
// its max_control_line (nats-server parser.go, overMaxControlLineLimit;
// 4096 bytes unless configured: MAX_CONTROL_LINE_SIZE in const.go), and
// nats.go takes that error as fatal: the connection is closed for good. A
// publish's line is "HPUB <subject> <reply> <header size> <total size>\r\n".
const (
	serverMaxControlLine = 4096
	// publishLineOverhead is all of that line but the subject: the verb,
	// the reply inbox (_INBOX.<nuid>.<token>, under 64 bytes), two sizes
	// and the separators, with room to spare.
	publishLineOverhead = 256
	// MaxSubjectBytes is the longest subject Publish sends.
	MaxSubjectBytes = serverMaxControlLine - publishLineOverhead
)

// fitsPayload checks a message against the server's max_payload, which
// counts its data and its encoded headers (nats.go refuses a larger one
// before sending it).
func (pb *publisher) fitsPayload(m *nats.Msg) error {
	size, limit := int64(m.Size()-len(m.Subject)-len(m.Reply)), pb.nc.MaxPayload()
	if size > limit {
		return fmt.Errorf("%w: the message is %d bytes with its headers; the NATS server takes at most %d (its max_payload)",
			errs.ErrPayloadTooLarge, size, limit)
	}
	return nil
}

// validSubject accepts a literal subject a client may publish to.
func validSubject(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("%w: subject is required", errs.ErrInvalidArgument)
	case len(s) > MaxSubjectBytes:
		return fmt.Errorf("%w: subject is %d bytes; at most %d are allowed", errs.ErrSubjectTooLong, len(s), MaxSubjectBytes)
	case strings.HasPrefix(s, "$"):
		return fmt.Errorf("%w: subject %q starts with $, which is reserved for the system", errs.ErrSubjectNotAllowed, s)
	case strings.HasPrefix(s, "_JETGATE.") || strings.HasPrefix(s, "_INBOX."):
		// A stream that captures them would carry a caller's message to the
		// replicas as a word of a reset, or to a client as a reply.
		return fmt.Errorf("%w: subject %q is reserved: _JETGATE. carries the gateway replicas' own messages, _INBOX. the replies to requests", errs.ErrSubjectNotAllowed, s)
	case strings.ContainsAny(s, " \t\r\n*>"):
		return fmt.Errorf("%w: subject %q must be a literal subject, without spaces or wildcards", errs.ErrInvalidArgument, s)
	case strings.HasPrefix(s, ".") || strings.HasSuffix(s, ".") || strings.Contains(s, ".."):
		return fmt.Errorf("%w: subject %q has an empty token", errs.ErrInvalidArgument, s)
	}
	return nil
}

// subjectMatches reports whether the literal subject matches pattern, with
// NATS wildcards: * one token, > one or more trailing tokens.
func subjectMatches(pattern, subject string) bool {
	for {
		pt, prest, pmore := strings.Cut(pattern, ".")
		st, srest, smore := strings.Cut(subject, ".")
		switch {
		case pt == ">":
			return true
		case pt != "*" && pt != st:
			return false
		case !pmore || !smore:
			return pmore == smore
		}
		pattern, subject = prest, srest
	}
}

// subjectsReload is how often at most a stream's known subjects are reloaded
// from the server, by a Publish to a subject outside them or by the first
// Publish once they are that old: often enough that a change made with the
// NATS CLI is seen soon (a subject moved to another stream is refused within
// it, rather than published there), seldom enough that a caller publishing
// to a wrong subject does not cost a request each time.
const subjectsReload = 5 * time.Second

// streamSubjects caches the subjects of the streams the gateway serves.
type streamSubjects struct {
	js       jetstream.JetStream
	timeout  time.Duration    // bounds each lookup, as any request to NATS
	interval time.Duration    // subjectsReload
	now      func() time.Time // time.Now; a test sets its own clock
	mu       sync.RWMutex
	m        map[string]*subjectsEntry
}

// subjectsEntry is one stream's subjects and when a miss may next reload them.
type subjectsEntry struct {
	subjects []string
	next     time.Time
}

func newStreamSubjects(js jetstream.JetStream, timeout time.Duration) *streamSubjects {
	return &streamSubjects{js: js, timeout: timeout, interval: subjectsReload, now: time.Now, m: make(map[string]*subjectsEntry)}
}

// load reads a stream's subjects from the server, for a stream the gateway
// serves.
func (s *streamSubjects) load(ctx context.Context, stream string) error {
	subjects, err := s.fetch(ctx, stream)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.m[stream] = &subjectsEntry{subjects: subjects, next: s.now().Add(s.interval)}
	s.mu.Unlock()
	return nil
}

func (s *streamSubjects) fetch(ctx context.Context, stream string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	st, err := s.js.Stream(ctx, stream)
	if err != nil {
		return nil, fmt.Errorf("look up stream %q: %w", stream, err)
	}
	return st.CachedInfo().Config.Subjects, nil
}

// allows checks that subject is bound to stream. A miss, or any check once
// they are an interval old, reloads the stream's subjects, in case they were
// changed since, but at most once an interval however many callers check:
// the first one after the interval reloads, the others answer from what is
// known.
func (s *streamSubjects) allows(ctx context.Context, stream, subject string) error {
	match := func(p string) bool { return subjectMatches(p, subject) }
	s.mu.RLock()
	e, ok := s.m[stream]
	var subjects []string
	var next time.Time
	if ok {
		subjects, next = e.subjects, e.next
	}
	s.mu.RUnlock()
	if !ok {
		return fmt.Errorf("%w: this gateway does not serve stream %q", errs.ErrStreamNotFound, stream)
	}
	known := slices.ContainsFunc(subjects, match)
	if known && s.now().Before(next) {
		return nil
	}
	s.mu.Lock()
	now := s.now()
	reload := !now.Before(e.next)
	if reload {
		e.next = now.Add(s.interval)
	}
	s.mu.Unlock()
	if !reload && known {
		return nil
	}
	if reload {
		if fresh, err := s.fetch(ctx, stream); err == nil {
			s.mu.Lock()
			e.subjects = fresh
			s.mu.Unlock()
			subjects = fresh
			known = slices.ContainsFunc(subjects, match)
		}
	}
	if known {
		return nil
	}
	return fmt.Errorf("%w: subject %q is not bound to stream %q (its subjects: %s)",
		errs.ErrSubjectNotAllowed, subject, stream, strings.Join(subjects, ", "))
}
