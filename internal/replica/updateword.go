package replica

import (
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// UpdateWordPrefix is the subject of the word of a consumer's create or
// update request that a replica saw pass, for the other replicas:
// <prefix><stream>.<consumer>, the request's body as it was. Through a
// JetStream domain, the hub maps a leaf node's $JS.<domain>.API request to
// $JS.API before it passes it on, so a replica on another leaf node never
// sees it: its leases outlived the server's shorter ack_wait, and its Ack
// landed on the redelivery another replica's caller held (a reviewer's
// finding). Only replicas that reach JetStream through a domain say it.
const UpdateWordPrefix = "_JETGATE.UPDATE."

// wordFrom names the replica that said a word, which does not hear its own.
const wordFrom = "Jetgate-Replica"

// updatesSeen is the last update of each consumer a replica took in, by the
// request or a word of it, so that the same one is followed once: every
// replica of the leaf node it passed on says it.
type updatesSeen struct {
	mu   sync.Mutex
	last map[consumerKey]seenUpdate
}

type seenUpdate struct {
	sum uint64
	at  time.Time
}

// sameUpdateWithin is how long an update's body counts as the one seen
// before: an operator who sends the same edit again later is followed
// again.
const sameUpdateWithin = 10 * time.Second

// first reports whether body is not the update of stream/name last seen
// within sameUpdateWithin, and notes it.
func (u *updatesSeen) first(stream, name string, body []byte, now time.Time) bool {
	h := fnv.New64a()
	_, _ = h.Write(body)
	sum, k := h.Sum64(), consumerKey{stream, name}
	u.mu.Lock()
	defer u.mu.Unlock()
	if s, ok := u.last[k]; ok && s.sum == sum && now.Sub(s.at) < sameUpdateWithin {
		return false
	}
	if u.last == nil {
		u.last = make(map[consumerKey]seenUpdate)
	}
	if len(u.last) > 4096 { // many consumers edited at once: forget, at worst follow one twice
		clear(u.last)
	}
	u.last[k] = seenUpdate{sum, now}
	return true
}

// sayUpdate passes on an update request of stream/name this replica saw,
// through a domain, to the other replicas.
func (rl *relay) sayUpdate(stream, name string, body []byte) {
	if rl.domain == "" {
		return
	}
	m := nats.NewMsg(UpdateWordPrefix + stream + "." + name)
	m.Header.Set(wordFrom, rl.self.String())
	m.Data = body
	_ = rl.nc.PublishMsg(m) // at most once, as the request itself reaches a replica
}

// onUpdateWord follows another replica's word of an update request, as the
// request itself is followed (onUpdate).
func (rl *relay) onUpdateWord(m *nats.Msg) {
	if m.Header.Get(wordFrom) == rl.self.String() {
		return
	}
	stream, name, ok := strings.Cut(strings.TrimPrefix(m.Subject, UpdateWordPrefix), ".")
	if !ok {
		return
	}
	rl.follow(stream, name, m.Data)
}

// follow takes in an update request of stream/name, once: the leases it
// shortens are cut at once, and the consumer asks its info until the
// change shows.
func (rl *relay) follow(stream, name string, body []byte) {
	c := rl.binder.bound(stream, name)
	if c == nil || !rl.updates.first(stream, name, body, time.Now()) {
		return
	}
	// The leases it cuts short are cut before the handler returns: a settle
	// waits for what the relay had received (catchUp), so none can land on
	// a redelivery the new timing made.
	if follow := c.Update(body); follow != nil {
		rl.run.Go(func() { follow(rl.run.ctx) })
	}
}
