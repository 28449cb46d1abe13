package replica

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
)

// relay routes what the server and other replicas say of consumers (reset
// requests and words, pause and delete advisories, create and update
// requests) to the consumer it concerns, if this replica serves it: one
// subscription each per replica, not per consumer.
type relay struct {
	*env
	binder  *binder
	pushers *pushers // told of pauses
	// jsDomain is the JetStream domain of the consumers the replica serves,
	// as the server's advisories name it ("": none); env's domain is the one
	// configured to reach them ("": the connection's own).
	jsDomain string
	// watchAPI is the prefix the requests are seen under: the domain's, or
	// $JS.API. where the connection's server is of the domain (it maps the
	// domain's prefix before delivering).
	watchAPI string
	subs     []*nats.Subscription
	// handled counts, by subscription, the messages its handler finished
	// with: catchUp waits until it matches what NATS delivered.
	handled []*atomic.Int64
	wakes   wakes // the replica's gaps (wake.go)
	// reconnects is the count of NATS reconnects whose leases were cut
	// (wake.go: reconnected); cutMu makes one settle cut them while the
	// others wait.
	reconnects atomic.Uint64
	cutMu      sync.Mutex
	updates    updatesSeen // followed once, by the request or a word (updateword.go)
}

// stop takes the relay off its subjects.
func (rl *relay) stop() {
	for _, sub := range rl.subs {
		_ = sub.Unsubscribe()
	}
}

// Resets (ADR-60) are noticed as the server notices them: every replica
// subscribes once to the reset requests (resetRequests), which every
// client's reset passes through, and the consumer voids its leases as one
// passes; a word of a reset from another replica goes to the consumer too.
// What a reset is, and the other ways one is noticed, are the consumer's
// (internal/consumer/reset.go).
const resetRequests = "CONSUMER.RESET." // under the API prefix

// The server's advisories that change what a replica knows of a consumer,
// heard once per replica rather than asked per consumer.
const (
	pauseAdvisories  = "$JS.EVENT.ADVISORY.CONSUMER.PAUSE."
	deleteAdvisories = "$JS.EVENT.ADVISORY.CONSUMER.DELETED."
	leaderAdvisories = "$JS.EVENT.ADVISORY.CONSUMER.LEADER_ELECTED."
)

// The requests that create or update a consumer, as they pass (under the
// API prefix, the JetStream domain's where one is set): every
// client's edit of a consumer (NATS CLI, Terraform, NACK, nats.go) goes
// through one of them, so a replica follows a policy change without
// polling, as it follows resets.
const (
	createRequests        = "CONSUMER.CREATE."         // <stream>.<consumer>[.<filter>], or <stream> (name in the body)
	durableCreateRequests = "CONSUMER.DURABLE.CREATE." // <stream>.<durable>
)

// servedDomain is the JetStream domain of the consumers a replica serves:
// the one configured to reach them, else the one its connection's
// JetStream has, which one request asks.
func servedDomain(ctx context.Context, js jetstream.JetStream, configured string) (string, error) {
	if configured != "" {
		return configured, nil
	}
	ai, err := js.AccountInfo(ctx)
	if err != nil {
		return "", fmt.Errorf("read the JetStream account's info: %w", err)
	}
	return ai.Domain, nil
}

// ours reports whether an advisory is one of the JetStream domain the
// replica serves: the server's advisories cross a leaf node both ways, and
// a hub's consumer and a leaf's may share their stream's and their own
// names.
func (rl *relay) ours(data []byte) bool {
	var a struct {
		Domain string `json:"domain"`
	}
	return json.Unmarshal(data, &a) == nil && a.Domain == rl.jsDomain
}

// consumerOf is the stream and consumer an advisory's subject names after
// prefix.
func consumerOf(subject, prefix string) (consumerKey, bool) {
	stream, name, ok := strings.Cut(strings.TrimPrefix(subject, prefix), ".")
	return consumerKey{stream, name}, ok && stream != "" && name != ""
}

// onPause records a consumer paused or resumed, by anyone.
func (rl *relay) onPause(m *nats.Msg) {
	key, ok := consumerOf(m.Subject, pauseAdvisories)
	if !ok || !rl.ours(m.Data) {
		return
	}
	var a struct {
		Paused bool `json:"paused"`
	}
	if json.Unmarshal(m.Data, &a) != nil {
		return
	}
	if c := rl.binder.bound(key.stream, key.name); c != nil {
		c.SetPaused(a.Paused)
		rl.pushers.paused(key)
	}
}

// onUpdate follows a create or update request for a consumer this replica
// serves (follow), and passes it on to the replicas that may not see it
// (sayUpdate, updateword.go).
func (rl *relay) onUpdate(m *nats.Msg) {
	prefix := rl.watchAPI + createRequests
	if strings.HasPrefix(m.Subject, rl.watchAPI+durableCreateRequests) {
		prefix = rl.watchAPI + durableCreateRequests
	}
	stream, name, _ := strings.Cut(strings.TrimPrefix(m.Subject, prefix), ".")
	name, _, _ = strings.Cut(name, ".") // what follows is the filter subject
	if name == "" {
		var req struct {
			Config struct {
				Durable string `json:"durable_name"`
				Name    string `json:"name"`
			} `json:"config"`
		}
		if json.Unmarshal(m.Data, &req) != nil {
			return
		}
		name = cmp.Or(req.Config.Name, req.Config.Durable)
	}
	rl.sayUpdate(stream, name, m.Data)
	rl.follow(stream, name, m.Data)
}

// onLeader cuts the leases of a consumer that has a new leader
// (consumer.LeaderElected). A settle waits for what the relay has already
// received (catchUp); the new leader's first redeliveries come later than
// its advisory, which NATS sends as it is elected.
func (rl *relay) onLeader(m *nats.Msg) {
	if key, ok := consumerOf(m.Subject, leaderAdvisories); ok && rl.ours(m.Data) {
		if c := rl.binder.bound(key.stream, key.name); c != nil {
			c.LeaderElected()
		}
	}
}

// onDelete tells a consumer deleted on the server (Consumer.Deleted), and
// unbinds it if it is served on demand; a configured one stays bound,
// answering NOT_FOUND until it is made again.
func (rl *relay) onDelete(m *nats.Msg) {
	key, ok := consumerOf(m.Subject, deleteAdvisories)
	if !ok || !rl.ours(m.Data) {
		return
	}
	if c := rl.binder.bound(key.stream, key.name); c != nil {
		c.Deleted()
	}
	rl.run.Go(func() {
		ctx, cancel := context.WithTimeout(rl.run.ctx, rl.timeout)
		defer cancel()
		rl.binder.unbind(ctx, key, "deleted on the server", func(*binding) bool { return true })
	})
}

// subscribe listens on the reset requests, the words of resets, and the
// advisories and requests of events.go.
func (rl *relay) subscribe() error {
	type watched struct {
		subject string
		handler nats.MsgHandler
	}
	subs := []watched{
		{rl.watchAPI + resetRequests + ">", rl.onResetRequest},
		{consumer.ResetWordPrefix + ">", rl.onResetWord},
		{pauseAdvisories + ">", rl.onPause},
		{deleteAdvisories + ">", rl.onDelete},
		{leaderAdvisories + ">", rl.onLeader},
		{rl.watchAPI + createRequests + ">", rl.onUpdate},
		{rl.watchAPI + durableCreateRequests + ">", rl.onUpdate},
	}
	if rl.domain != "" {
		subs = append(subs, watched{UpdateWordPrefix + ">", rl.onUpdateWord}) // updateword.go
	}
	for _, s := range subs {
		handler, handled := s.handler, new(atomic.Int64)
		sub, err := rl.nc.Subscribe(s.subject, func(m *nats.Msg) {
			defer handled.Add(1)
			handler(m)
		})
		if err != nil {
			return fmt.Errorf("subscribe to %s: %w", s.subject, err)
		}
		rl.subs, rl.handled = append(rl.subs, sub), append(rl.handled, handled)
	}
	return nil
}

// onResetRequest voids the leases of a consumer this replica serves whose
// reset request passed; the request's reply subject names the reset.
func (rl *relay) onResetRequest(m *nats.Msg) {
	stream, name, ok := strings.Cut(strings.TrimPrefix(m.Subject, rl.watchAPI+resetRequests), ".")
	if !ok {
		return
	}
	if c := rl.binder.bound(stream, name); c != nil {
		id := m.Reply
		if id == "" {
			id = nats.NewInbox() // a request nobody waits on: no other replica can name it either
		}
		c.ResetRequested(id)
	}
}

// onResetWord routes another replica's word of a reset to the consumer it
// names (consumer.HearResetWord: voided, then answered with this replica's
// id). A replica that does not serve the consumer holds none of its
// leases: it answers with its id at once, so that a sender that names it
// (the roster had it serving the consumer) does not wait for it.
func (rl *relay) onResetWord(m *nats.Msg) {
	stream, name, ok := strings.Cut(strings.TrimPrefix(m.Subject, consumer.ResetWordPrefix), ".")
	if c := rl.binder.bound(stream, name); ok && c != nil {
		c.HearResetWord(m)
		return
	}
	if sender, _, _ := strings.Cut(string(m.Data), " "); m.Reply != "" && sender != rl.self.String() {
		_ = m.Respond([]byte(rl.self.String()))
	}
}
