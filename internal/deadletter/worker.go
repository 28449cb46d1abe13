// Package deadletter copies the messages a consumer gives up on to its
// dead-letter subject, and puts them back on request (Redrive).
//
// The server tells of a message that ran out of deliveries, or was
// terminated, only by a core-NATS advisory, lost while nobody listens. So
// jetgate captures the advisories of every consumer with a dead letter in a
// work-queue stream of its own (AdvisoryStream) and works them off with one
// durable consumer shared by all replicas: a dead letter is never lost while
// jetgate is down, and the copy carries a Nats-Msg-Id made from the stream,
// sequence and event, so it is stored once however often it is made. A Term
// jetgate sent and the server confirmed is recorded there by jetgate too
// (RecordTerms): a server shutting down may drop the advisory of a Term it
// has just applied. A consumer whose letters cannot be stored (its
// dead-letter stream full or gone) is set aside so that it holds no other
// back (aside.go).
package deadletter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Names of what the worker creates.
const (
	AdvisoryStream = "JETGATE_ADVISORIES"
	WorkerDurable  = "jetgate_deadletters"
)

// The headers a dead letter carries besides the original's own.
const (
	HeaderStream      = "Jetgate-Dead-Stream"
	HeaderConsumer    = "Jetgate-Dead-Consumer"
	HeaderSeq         = "Jetgate-Dead-Seq"
	HeaderSubject     = "Jetgate-Dead-Subject"
	HeaderDeliveries  = "Jetgate-Dead-Deliveries"
	HeaderReason      = "Jetgate-Dead-Reason"
	HeaderTermReason  = "Jetgate-Dead-Term-Reason"
	ReasonMaxDeliver  = "MAX_DELIVERIES"
	ReasonTerminated  = "TERM"
	advisoryMaxDeliv  = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."
	advisoryTermed    = "$JS.EVENT.ADVISORY.CONSUMER.MSG_TERMINATED."
	retryUnknownAfter = 30 * time.Second
	retryFailedAfter  = 5 * time.Second
	// workerMaxAckPending bounds the advisories the worker holds, those
	// waiting for a retry included.
	workerMaxAckPending = 4096
)

// Route is one consumer's dead letter.
type Route struct {
	Stream, Consumer string
	Subject          string // where its dead letters go
	OnTerm           bool   // terminated messages too, not only those out of deliveries

	dead *bound // the stream that binds Subject, once Resolve found it
}

func (r Route) subjects() []string {
	s := []string{advisoryMaxDeliv + r.Stream + "." + r.Consumer}
	if r.OnTerm {
		s = append(s, advisoryTermed+r.Stream+"."+r.Consumer, recordTermed+r.Stream+"."+r.Consumer)
	}
	return s
}

// Options configure a Worker.
type Options struct {
	JS       jetstream.JetStream
	Routes   []Route
	Replicas int // of the advisory stream: as many as the streams it serves
	// Domain is the JetStream domain of the routes' consumers, as the
	// server's advisories name it ("" without domains): those of another
	// domain are not theirs.
	Domain string
	// Agreed is the KV bucket where every replica of every deployment
	// agrees on the advisory stream's subjects before it adds its own
	// (capture.go); nil: added without agreement (one replica alone).
	Agreed jetstream.KeyValue
	Log    *slog.Logger
	// Copied counts dead letters by stream, consumer and reason; nil keeps
	// no count.
	Copied *prometheus.CounterVec
	// Plain are the consumers (stream, name) this deployment serves
	// without a dead letter (unrouted).
	Plain [][2]string
}

// Worker works off the captured advisories of its routes.
type Worker struct {
	js     jetstream.JetStream
	routes map[[2]string]Route
	log    *slog.Logger
	copied *prometheus.CounterVec
	cc     jetstream.ConsumeContext
	recent recentLetters
	domain string             // the routes' consumers' JetStream domain
	plain  map[[2]string]bool // Options.Plain
	wait   waiting            // the consumers set aside (aside.go)
}

// Start makes sure each route's dead-letter subject is bound to a stream
// (Resolve),
// captures the routes' advisories (adding their subjects to the advisory
// stream, which other deployments may share) and starts working them off.
// Stop ends it.
func Start(ctx context.Context, o Options) (*Worker, error) {
	w := &Worker{js: o.JS, routes: make(map[[2]string]Route), log: o.Log, copied: o.Copied, domain: o.Domain, plain: make(map[[2]string]bool)}
	for _, k := range o.Plain {
		w.plain[k] = true
	}
	var subjects []string
	for _, r := range o.Routes {
		r, err := resolved(ctx, o.JS, r)
		if err != nil {
			return nil, err
		}
		w.routes[[2]string{r.Stream, r.Consumer}] = r
		subjects = append(subjects, r.subjects()...)
	}
	cfg := jetstream.StreamConfig{
		Name:        AdvisoryStream,
		Description: "jetgate: advisories of messages that ran out of deliveries or were terminated, until copied to their dead-letter subject",
		Subjects:    subjects,
		Retention:   jetstream.WorkQueuePolicy,
		MaxAge:      14 * 24 * time.Hour,
		Replicas:    max(o.Replicas, 1),
	}
	s, err := capture(ctx, o.JS, o.Agreed, cfg)
	if err != nil {
		return nil, fmt.Errorf("advisory stream %s: %w", AdvisoryStream, err)
	}
	cons, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:   WorkerDurable,
		AckPolicy: jetstream.AckExplicitPolicy,
		AckWait:   30 * time.Second,
		// An advisory waiting to be copied again (its dead-letter stream
		// refuses, another deployment's consumer) is pending until then:
		// room for many, so that they do not hold back the rest.
		MaxAckPending: workerMaxAckPending,
	})
	if err != nil {
		return nil, fmt.Errorf("advisory consumer %s: %w", WorkerDurable, err)
	}
	if err := w.startWaiting(ctx, o.Replicas); err != nil {
		// Not fatal: a NATS user not allowed the stream, or an account at
		// its limit of streams, keeps the dead letters as they were.
		w.log.Warn("dead letters that cannot be stored will hold other consumers' back: "+WaitingStream+" is not available; allow jetgate's NATS user to create and use it",
			"err", err)
	}
	if w.cc, err = cons.Consume(w.handle, jetstream.PullMaxMessages(64)); err != nil {
		w.stopWaiting(ctx)
		return nil, fmt.Errorf("consume advisories: %w", err)
	}
	return w, nil
}

// Stop stops taking advisories and waits for the one in hand, at most until
// ctx ends.
func (w *Worker) Stop(ctx context.Context) {
	if w.js.Conn().IsConnected() {
		w.cc.Drain() // what it has taken is worked off
	} else {
		w.cc.Stop() // a drain would wait on NATS (its flush); what it holds is redelivered to another worker
	}
	select {
	case <-w.cc.Closed():
	case <-ctx.Done():
	}
	w.stopWaiting(ctx)
}

// advisory is what the MAX_DELIVERIES and MSG_TERMINATED advisories say,
// and a Term's record (RecordTerms).
type advisory struct {
	Stream     string    `json:"stream"`
	Consumer   string    `json:"consumer"`
	StreamSeq  uint64    `json:"stream_seq"`
	Deliveries uint64    `json:"deliveries"`
	Reason     string    `json:"reason"`    // MSG_TERMINATED: the Term's reason
	Time       time.Time `json:"timestamp"` // when the server gave up on the message (zero: not said)
	Domain     string    `json:"domain"`    // the consumer's JetStream domain
}

func (w *Worker) handle(m jetstream.Msg) {
	var reason string
	switch subj := m.Subject(); {
	case strings.HasPrefix(subj, advisoryMaxDeliv):
		reason = ReasonMaxDeliver
	case strings.HasPrefix(subj, advisoryTermed), strings.HasPrefix(subj, recordTermed):
		reason = ReasonTerminated
	default:
		_ = m.Term()
		return
	}
	stream, consumer, as, err := parseEvent(m)
	if md, merr := m.Metadata(); merr == nil {
		for i := range as {
			if as[i].Time.IsZero() { // a record: the event is no later than its capture
				as[i].Time = md.Timestamp
			}
		}
	}
	switch {
	case err != nil:
		w.log.Error("dropped an advisory that does not parse", "subject", m.Subject(), "err", err)
		_ = m.Term()
		return
	case len(as) == 0: // ProbeRecords'
		_ = m.Ack()
		return
	case as[0].Domain != w.domain && !(as[0].Domain == "" && strings.HasPrefix(m.Subject(), recordTermed)):
		// Of another JetStream domain's consumer of the same names: the
		// server's advisories, and jetgate's records, cross a leaf node.
		// (A record naming no domain is of a replica from before records
		// named theirs: taken as this domain's.)
		_ = m.Ack()
		return
	}
	key := [2]string{stream, consumer}
	r, ok := w.routes[key]
	switch {
	case !ok:
		w.unrouted(m, key, reason, as)
		return
	case reason == ReasonTerminated && !r.OnTerm:
		_ = m.Ack()
		return
	}
	if w.isAside(key) { // its letters wait: parked behind them, not tried
		w.parkOrNak(m, key, reason, as, retryFailedAfter)
		return
	}
	if err := w.copyAll(context.Background(), r, as, reason, redelivered(m), func() { _ = m.InProgress() }); err != nil {
		w.putAside(m, key, reason, as, err)
		return
	}
	_ = m.Ack()
}

// copyAll copies the dead letters of one event's advisories as, of route
// r. again: the event was tried before (its stream not found then and now is
// taken as deleted). progress is called before each letter but the first
// (a record of many Terms: not redelivered to another worker meanwhile).
func (w *Worker) copyAll(ctx context.Context, r Route, as []advisory, reason string, again bool, progress func()) error {
	var orig jetstream.Stream // the messages' stream, looked up once an event
	for i, a := range as {
		id := letterID(a, reason)
		if w.recent.has(id, time.Now()) { // the other of a Term's record and advisory: the copy is stored
			continue
		}
		if i > 0 {
			progress()
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		var err error
		if orig == nil {
			orig, err = w.js.Stream(ctx, a.Stream)
			if errors.Is(err, jetstream.ErrStreamNotFound) && again {
				orig, err = nil, nil // deleted (found so twice): its dead letters have their headers alone
			}
		}
		var stored bool
		if err == nil {
			stored, err = w.copy(ctx, r, orig, a, reason, id)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("stream %s consumer %s stream_seq %d: %w", a.Stream, a.Consumer, a.StreamSeq, err)
		}
		if stored && w.copied != nil { // not a copy made again: a Term's record and advisory, an advisory redelivered
			w.copied.WithLabelValues(a.Stream, a.Consumer, reason).Inc()
		}
		w.recent.add(id, time.Now())
	}
	return nil
}

// redelivered reports whether m was delivered to the worker before: what
// looked final the first time (a stream not found, as a cluster's meta
// leader moves) is taken as final on the second.
func redelivered(m jetstream.Msg) bool {
	md, err := m.Metadata()
	return err == nil && md.NumDelivered > 1
}

// parseEvent reads an advisory (one message) or a record of Terms (those of
// one settle; none: a probe) as the advisories of its messages.
func parseEvent(m jetstream.Msg) (stream, consumer string, as []advisory, _ error) {
	if strings.HasPrefix(m.Subject(), recordTermed) {
		var rec termRecord
		if err := json.Unmarshal(m.Data(), &rec); err != nil {
			return "", "", nil, err
		}
		for _, t := range rec.Terms {
			if t.StreamSeq == 0 {
				return "", "", nil, errors.New("a Term of stream sequence 0")
			}
			as = append(as, advisory{Stream: rec.Stream, Consumer: rec.Consumer, StreamSeq: t.StreamSeq, Deliveries: t.Deliveries, Reason: rec.Reason, Domain: rec.Domain})
		}
		return rec.Stream, rec.Consumer, as, nil
	}
	var a advisory
	if err := json.Unmarshal(m.Data(), &a); err != nil {
		return "", "", nil, err
	}
	if a.StreamSeq == 0 {
		return "", "", nil, errors.New("no stream_seq")
	}
	return a.Stream, a.Consumer, []advisory{a}, nil
}

// letterID is the Nats-Msg-Id of the dead letter of the advisory's message
// and event.
func letterID(a advisory, reason string) string {
	return "jetgate-dead:" + a.Stream + ":" + a.Consumer + ":" + strconv.FormatUint(a.StreamSeq, 10) + ":" + reason
}

// copy publishes the dead letter of the advisory's message, read from its
// stream s (nil: deleted), and reports whether it was stored: false where
// the stream had it already (its Nats-Msg-Id). A letter whose message is
// gone, or is another (the stream was made again since the event), or
// would be over NATS's max_payload or its stream's max_msg_size, is stored
// with its headers alone.
func (w *Worker) copy(ctx context.Context, r Route, s jetstream.Stream, a advisory, reason, id string) (stored bool, _ error) {
	dl := &nats.Msg{Subject: r.Subject, Header: nats.Header{}}
	var orig *jetstream.RawStreamMsg
	var err error
	switch {
	case s == nil:
		w.log.Warn("the stream of a dead letter's message is gone", "stream", a.Stream, "stream_seq", a.StreamSeq)
	case !a.Time.IsZero() && s.CachedInfo().Created.After(a.Time):
		w.log.Warn("the stream of a dead letter's message was made again since; its message is gone", "stream", a.Stream, "stream_seq", a.StreamSeq)
	default:
		orig, err = s.GetMsg(ctx, a.StreamSeq)
	}
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		// Gone from its stream (a work queue, or a limit): the dead letter
		// says so with its headers alone.
		w.log.Warn("the message of a dead letter is no longer in its stream", "stream", a.Stream, "stream_seq", a.StreamSeq)
	case err != nil:
		return false, err
	case orig != nil:
		dl.Data = orig.Data
		for k, vs := range orig.Header {
			if !reservedHeader(k) && !deadHeader(k) {
				dl.Header[k] = vs
			}
		}
		dl.Header.Set(HeaderSubject, orig.Subject)
	}
	dl.Header.Set(HeaderStream, a.Stream)
	dl.Header.Set(HeaderConsumer, a.Consumer)
	dl.Header.Set(HeaderSeq, strconv.FormatUint(a.StreamSeq, 10))
	dl.Header.Set(HeaderDeliveries, strconv.FormatUint(a.Deliveries, 10))
	dl.Header.Set(HeaderReason, reason)
	if reason == ReasonTerminated && strings.TrimSpace(a.Reason) != "" {
		dl.Header.Set(HeaderTermReason, a.Reason)
	}
	ack, err := w.js.PublishMsg(ctx, dl, jetstream.WithMsgID(id))
	if tooBig(err) {
		// The message and the dead letter's headers are over what NATS or
		// the dead-letter stream (max_msg_size) takes: retried, it would
		// never be; the letter keeps its headers.
		w.log.Warn("a dead letter with its message is over NATS's max_payload or its stream's max_msg_size: it is stored without it",
			"stream", a.Stream, "stream_seq", a.StreamSeq, "size", len(dl.Data), "err", err)
		for k := range dl.Header {
			if !deadHeader(k) || k == HeaderSubject {
				delete(dl.Header, k)
			}
		}
		dl.Data = nil
		ack, err = w.js.PublishMsg(ctx, dl, jetstream.WithMsgID(id))
	}
	if err != nil {
		return false, err
	}
	return !ack.Duplicate, nil
}
