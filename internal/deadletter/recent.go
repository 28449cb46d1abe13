package deadletter

import (
	"sync"
	"time"
)

// recentIDs and recentFor bound recentLetters: a Term's record and its
// advisory come seconds apart, minutes where another deployment's worker
// passes them on; an id kept longer would hide a later dead letter of the
// same sequence (the stream recreated, the consumer reset).
const (
	recentIDs = 4096
	recentFor = 10 * time.Minute
)

// recentLetters are the ids of the last dead letters the worker stored, or
// found stored: the second of a Term's two events (its record and the
// server's advisory), mostly taken by the same worker right after the
// first, is acked without reading the message and publishing it again.
type recentLetters struct {
	mu   sync.Mutex
	ids  map[string]time.Time // when each was stored
	ring [recentIDs]string
	next int
}

func (r *recentLetters) has(id string, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.ids[id]
	return ok && now.Sub(at) < recentFor
}

func (r *recentLetters) add(id string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = make(map[string]time.Time, recentIDs)
	}
	if _, ok := r.ids[id]; ok {
		r.ids[id] = now
		return
	}
	delete(r.ids, r.ring[r.next])
	r.ring[r.next], r.ids[id] = id, now
	r.next = (r.next + 1) % recentIDs
}
