package core

import (
	"cmp"
	"context"
	"encoding/json"
	"strings"

	"github.com/nats-io/nats.go"
)

// relay routes what the server and other replicas say of consumers (reset
// requests and words, pause and delete advisories, create and update
// requests) to the consumer it concerns, if this replica serves it: one
// subscription each per replica, not per consumer.
type relay struct {
	*env
	binder *binder
	subs   []*nats.Subscription
}

// stop takes the relay off its subjects.
func (rl *relay) stop() {
	for _, sub := range rl.subs {
		_ = sub.Unsubscribe()
	}
}

// The server's advisories that change what a replica knows of a consumer,
// heard once per replica rather than asked per consumer.
const (
	pauseAdvisories  = "$JS.EVENT.ADVISORY.CONSUMER.PAUSE."
	deleteAdvisories = "$JS.EVENT.ADVISORY.CONSUMER.DELETED."
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

// consumerOf is the stream and consumer an advisory's subject names after
// prefix.
func consumerOf(subject, prefix string) (consumerKey, bool) {
	stream, name, ok := strings.Cut(strings.TrimPrefix(subject, prefix), ".")
	return consumerKey{stream, name}, ok && stream != "" && name != ""
}

// onPause records a consumer paused or resumed, by anyone.
func (rl *relay) onPause(m *nats.Msg) {
	key, ok := consumerOf(m.Subject, pauseAdvisories)
	if !ok {
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
	}
}

// onUpdate follows a create or update request for a consumer this replica
// serves: the consumer asks its info until the change shows.
func (rl *relay) onUpdate(m *nats.Msg) {
	prefix := rl.api + createRequests
	if strings.HasPrefix(m.Subject, rl.api+durableCreateRequests) {
		prefix = rl.api + durableCreateRequests
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
	c := rl.binder.bound(stream, name)
	if c == nil {
		return
	}
	data := m.Data
	rl.run.goUnlessClosed(func() { c.FollowUpdate(rl.run.ctx, data) })
}

// onDelete unbinds an on-demand consumer deleted on the server; a
// configured one stays bound, answering NOT_FOUND until it is made again.
func (rl *relay) onDelete(m *nats.Msg) {
	key, ok := consumerOf(m.Subject, deleteAdvisories)
	if !ok {
		return
	}
	rl.run.goUnlessClosed(func() {
		ctx, cancel := context.WithTimeout(rl.run.ctx, rl.timeout)
		defer cancel()
		rl.binder.unbind(ctx, key, "deleted on the server", func(*binding) bool { return true })
	})
}
