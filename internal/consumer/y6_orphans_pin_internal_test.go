package consumer

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/pull"
)

// spareOf is a delivery of a pinned group, numbered cseq by the server.
func spareOf(pin string, cseq uint64, at time.Time) *Delivery {
	return &Delivery{Header: nats.Header{pull.PinHeader: []string{pin}}, Meta: pull.Metadata{ConsumerSeq: cseq}, start: at}
}

// The spares of a pin are let go, for a Nak, only on word that their pin is
// gone: a delivery of the group with another pin made after them (not one
// of an older pin read late, nor one of another group), an Unpin of the
// group sent after they came, or a pull refused for their pin.
func TestTheSparesOfAPinGoOnlyWithThePin(t *testing.T) {
	now := time.Now()
	pool := func() *orphanPool {
		o := newOrphanPool(nil, func(*Delivery, time.Time) bool { return true })
		o.spare([]*Delivery{spareOf("p1", 10, now)}, nil, "main", now)
		return o
	}
	for _, c := range []struct {
		name string
		word func(o *orphanPool)
		gone bool
	}{
		{"nothing said", func(*orphanPool) {}, false},
		{"a delivery of the same pin", func(o *orphanPool) { o.repinned("main", []*Delivery{spareOf("p1", 11, now)}) }, false},
		{"a delivery of an older pin, read late", func(o *orphanPool) { o.repinned("main", []*Delivery{spareOf("p0", 9, now)}) }, false},
		{"a delivery of another group", func(o *orphanPool) { o.repinned("other", []*Delivery{spareOf("p2", 11, now)}) }, false},
		{"a delivery of no pin", func(o *orphanPool) { o.repinned("main", []*Delivery{{Meta: pull.Metadata{ConsumerSeq: 11}}}) }, false},
		{"a delivery of a newer pin", func(o *orphanPool) { o.repinned("main", []*Delivery{spareOf("p2", 11, now)}) }, true},
		{"an Unpin sent before they came", func(o *orphanPool) { o.unpinned("main", now.Add(-time.Second)) }, false},
		{"an Unpin of another group", func(o *orphanPool) { o.unpinned("other", now.Add(time.Second)) }, false},
		{"an Unpin sent after they came", func(o *orphanPool) { o.unpinned("main", now.Add(time.Second)) }, true},
		{"a pull refused for another pin", func(o *orphanPool) { o.pinRefused("p0") }, false},
		{"a pull refused for their pin", func(o *orphanPool) { o.pinRefused("p1") }, true},
	} {
		o := pool()
		c.word(o)
		if got := len(o.due(now.Add(time.Millisecond))) == 1; got != c.gone {
			t.Errorf("%s: nak'ed %v, want %v", c.name, got, c.gone)
		}
	}
}
