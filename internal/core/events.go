package core

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/nats-io/nats.go"
)

// The server's advisories that change what a replica knows of a consumer,
// heard once per replica rather than asked per consumer.
const (
	pauseAdvisories  = "$JS.EVENT.ADVISORY.CONSUMER.PAUSE."
	deleteAdvisories = "$JS.EVENT.ADVISORY.CONSUMER.DELETED."
)

// consumerOf is the stream and consumer an advisory's subject names after
// prefix.
func consumerOf(subject, prefix string) (consumerKey, bool) {
	stream, name, ok := strings.Cut(strings.TrimPrefix(subject, prefix), ".")
	return consumerKey{stream, name}, ok && stream != "" && name != ""
}

// onPause records a consumer paused or resumed, by anyone.
func (r *Replica) onPause(m *nats.Msg) {
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
	if c := r.bound(key.stream, key.name); c != nil {
		c.SetPaused(a.Paused)
	}
}

// onDelete unbinds an on-demand consumer deleted on the server; a
// configured one stays bound, answering NOT_FOUND until it is made again.
func (r *Replica) onDelete(m *nats.Msg) {
	key, ok := consumerOf(m.Subject, deleteAdvisories)
	if !ok {
		return
	}
	r.goUnlessClosed(func() {
		ctx, cancel := context.WithTimeout(r.runCtx, r.timeout)
		defer cancel()
		r.unbind(ctx, key, "deleted on the server", func(*binding) bool { return true })
	})
}
