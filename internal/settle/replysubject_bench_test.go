package settle

import (
	"testing"

	"github.com/nats-io/nats.go"
)

// BenchmarkReplySubject is what a settle's reply subject costs, its id
// random (open) rather than counted: a few tens of nanoseconds against the
// settle's round trip to NATS.
func BenchmarkReplySubject(b *testing.B) {
	s := &Sender{prefix: nats.NewInbox(), routes: make(map[uint64]func(*nats.Msg))}
	fn := func(*nats.Msg) {}
	for b.Loop() {
		_, id := s.open(fn)
		s.close(id)
	}
}
