package lease

import (
	"cmp"
	"slices"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// Holder is one principal's live leases in a table.
type Holder struct {
	Principal string
	Leases    int
	Oldest    time.Time // when the oldest was handed out
	Latest    time.Time // the latest deadline among them, a kept lease's keep
	Kept      int       // how many of them their issuer keeps alive (Extend with a duration)
}

// Hand records that the deliveries rs were handed out to principal at now,
// and returns the deadline of each as the table has it now (re-dated or
// cut since it was received); zero for a delivery the table no longer holds
// (voided, or replaced), which is skipped.
func (t *Table) Hand(rs []Ref, principal string, now time.Time) (deadlines []time.Time) {
	ms := now.UnixMilli()
	deadlines = make([]time.Time, len(rs))
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, r := range rs {
		if e := t.lookup(r); e != nil {
			e.holder, e.handed = principal, ms
			deadlines[i] = e.Deadline
		}
	}
	return deadlines
}

// Holders counts the live leases handed out, by principal, most leases
// first. Leases past their deadline that no sweep has dropped yet, and
// deliveries not handed out (held for the next Fetch, or adopted from a
// token), are not counted.
func (t *Table) Holders(now time.Time) []Holder {
	by := map[string]*Holder{}
	t.mu.Lock()
	for _, e := range t.entries {
		if e.handed == 0 || !now.Before(e.Deadline) {
			continue
		}
		h := by[e.holder]
		if h == nil {
			h = &Holder{Principal: e.holder, Oldest: time.UnixMilli(e.handed)}
			by[e.holder] = h
		}
		h.Leases++
		if at := time.UnixMilli(e.handed); at.Before(h.Oldest) {
			h.Oldest = at
		}
		until := e.Deadline
		if e.keep != 0 {
			h.Kept++
			until = time.UnixMilli(e.keep)
		}
		if until.After(h.Latest) {
			h.Latest = until
		}
	}
	t.mu.Unlock()
	out := make([]Holder, 0, len(by))
	for _, h := range by {
		out = append(out, *h)
	}
	slices.SortFunc(out, func(a, b Holder) int {
		return cmp.Or(cmp.Compare(b.Leases, a.Leases), cmp.Compare(a.Principal, b.Principal))
	})
	return out
}

// Origins are the creation contexts of the deliveries rs that the table
// holds with one (zero for the others).
func (t *Table) Origins(rs []Ref) []trace.SpanContext {
	out := make([]trace.SpanContext, len(rs))
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, r := range rs {
		if e := t.lookup(r); e != nil && e.Origin != nil {
			out[i] = *e.Origin
		}
	}
	return out
}
