package consumer

import (
	"slices"
	"time"

	"github.com/jetgate/jetgate/internal/pull"
)

// The rest of a pinned Fetch is kept for the next Fetch that names its pin
// (take). Once that pin is no longer its group's, none will: the new pin's
// caller would wait for those messages until just before their leases end.
// So when the replica learns the pin went (its own Unpin, a delivery of the
// group with another pin, a pull refused for the pin), the rest becomes
// orphans like any other, nak'ed back once its pull has ended (due), and
// the server delivers it to the new pin's pulls, whichever replica's. A pin
// moved on where this replica sees none of it (an Unpin through another
// replica, a lapse with nothing delivered here since) leaves its rest to
// the leases' end still.

// unspare makes the spares that gone picks (given each one's pin) orphans
// like any other, and reports whether there were any.
func (o *orphanPool) unspare(gone func(h *orphan, pin string) bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	found := false
	for _, h := range o.held {
		if pin := h.d.Header.Get(pull.PinHeader); h.spare && pin != "" && gone(h, pin) {
			h.spare, found = false, true
		}
	}
	return found
}

// unpinned lets go of the spares of group received before sent, when an
// Unpin of the group was sent: their pin was the group's before it, and
// went with it.
func (o *orphanPool) unpinned(group string, sent time.Time) bool {
	return o.unspare(func(h *orphan, _ string) bool { return h.group == group && h.d.start.Before(sent) })
}

// repinned lets go of the spares of group of another pin than one of ds,
// deliveries to a pull of the group, carries, and delivered before it: the
// server numbers its deliveries in the order it makes them (a reset, which
// numbers them anew, voids the spares), so theirs was the group's pin
// before ds's was. One delivered after it, but read earlier, may be of a
// pin newer than ds's, and is kept.
func (o *orphanPool) repinned(group string, ds []*Delivery) bool {
	if group == "" {
		return false // a pull of no group: no pin
	}
	i := slices.IndexFunc(ds, func(d *Delivery) bool { return d.Header.Get(pull.PinHeader) != "" })
	if i < 0 {
		return false
	}
	now, seq := ds[i].Header.Get(pull.PinHeader), ds[i].Meta.ConsumerSeq
	return o.unspare(func(h *orphan, pin string) bool {
		return h.group == group && pin != now && h.d.Meta.ConsumerSeq < seq
	})
}

// pinRefused lets go of the spares of pin, which the server refused a pull
// for (423): it is not its group's pin, and pins are never given again.
func (o *orphanPool) pinRefused(pin string) bool {
	return pin != "" && o.unspare(func(_ *orphan, p string) bool { return p == pin })
}
