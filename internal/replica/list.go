package replica

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/deadletter"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natsname"
)

// lister answers what callers may read of the streams and consumers a
// replica serves: lists, a consumer's status (status.go), its leases on
// every replica (leases.go) and its dead letters' count.
type lister struct {
	*env
	binder      *binder
	pushers     *pushers
	deadLetters *deadLetters
	sub         *nats.Subscription // questions about leases (leases.go)
}

// stop takes the lister off the questions about leases.
func (l *lister) stop() {
	if l.sub != nil {
		_ = l.sub.Unsubscribe()
	}
}

// Listing, for operators and the console (DESIGN section 16). What the
// lists cost the NATS server: one stream info per stream listed (with an
// admin block, the stream names and every CONSUMER.LIST page of each stream
// it allows that the caller may read, to find the consumers created through
// the API: binder.eachCreated), one
// $JS.API.CONSUMER.LIST page per stream (up to 256 consumers), and per
// consumer no more than its GetConsumer would (a read of its oldest
// unacknowledged message, a count of its dead letters).

// Visible reports whether the caller may see a stream's consumer; with
// consumer "", whether it may see some consumer of the stream.
type Visible func(stream, consumer string) bool

// StreamSummary is a stream the replica serves consumers of.
type StreamSummary struct {
	Info      *jetstream.StreamInfo
	Consumers int // served and visible
}

// ConsumerSummary is one served consumer's backlog.
type ConsumerSummary struct {
	Info             *jetstream.ConsumerInfo
	OldestUnackedAge time.Duration
	DeadLetters      int64
	DeadLetter       bool // a dead-letter subject is configured
	Pushed           bool
	GatewayLeases    int
}

// served are the consumers the replica serves, by stream and name. It is
// the one place the lists read the replica's consumers.
func (l *lister) served() []*consumer.Consumer {
	bs := l.binder.all()
	out := make([]*consumer.Consumer, 0, len(bs))
	for _, b := range bs {
		out = append(out, b.c)
	}
	slices.SortFunc(out, func(a, b *consumer.Consumer) int {
		return cmp.Or(cmp.Compare(a.Stream, b.Stream), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// Streams lists the streams with a consumer that visible lets the caller
// see: one the replica serves, or one created through the API (served by
// every replica, bound here or not yet); and the streams the admin block
// opens where the caller may see some consumer, with none yet.
func (l *lister) Streams(ctx context.Context, visible Visible) ([]StreamSummary, error) {
	counts := map[string]int{}
	counted := map[consumerKey]bool{}
	for _, c := range l.served() {
		if visible(c.Stream, c.Name) {
			counts[c.Stream]++
			counted[consumerKey{c.Stream, c.Name}] = true
		}
	}
	if err := l.countCreated(ctx, visible, counted, counts); err != nil {
		return nil, err
	}
	out := make([]StreamSummary, 0, len(counts))
	for _, name := range slices.Sorted(maps.Keys(counts)) {
		s, err := l.js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue // deleted on the server since its consumer was bound
		}
		if err != nil {
			return nil, natsError(ctx, fmt.Sprintf("stream %q", name), err)
		}
		out = append(out, StreamSummary{Info: s.CachedInfo(), Consumers: counts[name]})
	}
	return out, nil
}

// countCreated adds to counts, by stream, the consumers created through
// the API that visible lets the caller see and that are not counted yet,
// on the streams the caller may see some consumer of.
func (l *lister) countCreated(ctx context.Context, visible Visible, counted map[consumerKey]bool, counts map[string]int) error {
	if l.binder.admin == nil {
		return nil
	}
	// may is asked of the streams the admin block opens, and lists each one
	// the caller may see some consumer of, with none yet as with many.
	may := func(stream string) bool {
		ok := visible(stream, "")
		if _, listed := counts[stream]; ok && !listed {
			counts[stream] = 0
		}
		return ok
	}
	err := l.binder.eachCreated(ctx, may, func(stream string, ci *jetstream.ConsumerInfo) {
		if l.binder.admin.Matches(stream, ci.Name) && visible(stream, ci.Name) && !counted[consumerKey{stream, ci.Name}] {
			counts[stream]++
		}
	})
	if ctx.Err() != nil {
		return ctx.Err() // the caller's own end, not NATS's
	}
	return err
}

// Consumers lists the consumers of stream the replica serves that visible
// lets the caller see, from one CONSUMER.LIST page (more only past 256
// consumers on the stream).
func (l *lister) Consumers(ctx context.Context, stream string, visible Visible) ([]ConsumerSummary, error) {
	want := map[string]*consumer.Consumer{}
	var order []string
	for _, c := range l.served() {
		if c.Stream == stream && visible(c.Stream, c.Name) {
			want[c.Name] = c
			order = append(order, c.Name)
		}
	}
	// Consumers created through the API are served by every replica,
	// bound or not here yet: the whole list is read to find them.
	created := func(string) bool { return false }
	n := len(want)
	// A stream the admin block opens, where the caller may see some
	// consumer, is listed with none yet as with many (as Pub/Sub lists a
	// topic's subscriptions): a team starts from it.
	open := false
	if admin := l.binder.admin; admin.StreamAllowed(stream) && !natsname.Internal(stream) {
		open = visible(stream, "")
		created = func(name string) bool { return admin.Matches(stream, name) && visible(stream, name) }
		n = math.MaxInt
	}
	if n == 0 {
		// The same answer whether the stream is served or not: a caller
		// learns nothing of the consumers it may not see.
		return nil, noneVisible(stream)
	}
	infos, err := l.consumerInfos(ctx, stream, n, func(name string) bool { return want[name] != nil || created(name) })
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(infos)) {
		if want[name] == nil && infos[name].Config.Metadata[consumer.CreatedBy] != "" {
			c, done, err := l.binder.consumer(ctx, stream, name)
			if err != nil {
				continue // deleted meanwhile, or not servable
			}
			done()
			want[name] = c
			order = append(order, name)
		}
	}
	if len(order) == 0 && !open {
		return nil, noneVisible(stream) // the stream exists: consumerInfos found it
	}
	out := make([]ConsumerSummary, 0, len(order))
	for _, name := range order {
		ci, ok := infos[name]
		if !ok {
			continue // deleted on the server; GetConsumer says NOT_FOUND
		}
		s, err := l.summary(ctx, want[name], ci)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func noneVisible(stream string) error {
	return fmt.Errorf("%w: this gateway serves no consumer of stream %q that you may see", errs.ErrStreamNotFound, stream)
}

func (l *lister) summary(ctx context.Context, c *consumer.Consumer, ci *jetstream.ConsumerInfo) (ConsumerSummary, error) {
	s := ConsumerSummary{Info: ci, GatewayLeases: c.Leases(), Pushed: l.pushers.pushState(c) != nil}
	var err error
	if s.OldestUnackedAge, err = c.OldestUnackedAge(ctx, ci); err != nil {
		return s, err
	}
	var route deadletter.Route
	if route, s.DeadLetter = l.deadLetters.routes[consumerKey{c.Stream, c.Name}]; s.DeadLetter {
		if s.DeadLetters, err = l.deadLetters.count(ctx, route); err != nil {
			return s, err
		}
	}
	return s, nil
}

// consumerList is a page of $JS.API.CONSUMER.LIST.
type consumerList struct {
	Total  int                       `json:"total"`
	Offset int                       `json:"offset"`
	Limit  int                       `json:"limit"`
	Error  *jetstream.APIError       `json:"error,omitempty"`
	Infos  []*jetstream.ConsumerInfo `json:"consumers"`
}

// consumerInfos reads CONSUMER.LIST pages of stream until it has the
// infos of n consumers that keep selects, or the list ends.
func (l *lister) consumerInfos(ctx context.Context, stream string, n int, keep func(string) bool) (map[string]*jetstream.ConsumerInfo, error) {
	out := make(map[string]*jetstream.ConsumerInfo, n)
	for offset := 0; len(out) < n; {
		body, _ := json.Marshal(map[string]int{"offset": offset})
		rctx, cancel := context.WithTimeout(ctx, l.timeout)
		m, err := l.nc.RequestWithContext(rctx, l.api+"CONSUMER.LIST."+stream, body)
		cancel()
		if err != nil {
			return nil, natsError(ctx, fmt.Sprintf("list the consumers of stream %q", stream), err)
		}
		var page consumerList
		if err := json.Unmarshal(m.Data, &page); err != nil {
			return nil, fmt.Errorf("%w: list the consumers of stream %q: %v", errs.ErrUnavailable, stream, err)
		}
		if page.Error != nil {
			if page.Error.ErrorCode == jetstream.JSErrCodeStreamNotFound {
				return nil, fmt.Errorf("%w: stream %q", errs.ErrStreamNotFound, stream)
			}
			return nil, fmt.Errorf("%w: list the consumers of stream %q: %s", errs.ErrUnavailable, stream, page.Error.Description)
		}
		for _, ci := range page.Infos {
			if ci != nil && keep(ci.Name) {
				out[ci.Name] = ci
			}
		}
		offset += len(page.Infos)
		if len(page.Infos) == 0 || offset >= page.Total {
			break
		}
	}
	return out, nil
}

// natsError is err from a request to the NATS server about what: the
// caller's own end passes through, anything else is UNAVAILABLE.
func natsError(ctx context.Context, what string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("%w: %s", errs.ErrStreamNotFound, what)
	}
	if errors.Is(err, nats.ErrNoResponders) {
		return fmt.Errorf("%w: %s: JetStream did not answer", errs.ErrUnavailable, what)
	}
	return fmt.Errorf("%w: %s: %v", errs.ErrUnavailable, what, err)
}
