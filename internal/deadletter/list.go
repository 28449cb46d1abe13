package deadletter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
)

// PreviewBytes is how much of a dead letter's data List returns.
const PreviewBytes = 1024

// Letter is one dead letter as List shows it.
type Letter struct {
	Seq     uint64 // in the dead-letter stream
	Header  nats.Header
	Preview []byte // the first PreviewBytes of its data
	Size    int
	Time    time.Time
}

// maxListScan bounds the messages one page reads: letters of other
// consumers on a shared subject are read past one request each, and a
// page that meets this many ends short, its next page where it stopped.
const maxListScan = 1000

// List reads up to n of r's dead letters from the sequence from on, oldest
// first, and the sequence of the next one (0 when there is none): one
// request a letter, and one more to learn whether another follows.
func List(ctx context.Context, js jetstream.JetStream, r Route, from uint64, n int) ([]Letter, uint64, error) {
	s, _, err := r.currentOr(ctx, js, "list dead letters")
	if err != nil {
		return nil, 0, err
	}
	var out []Letter
	for next, read := max(from, 1), 0; ; read++ {
		if read == maxListScan {
			return out, next, nil
		}
		m, err := s.GetMsg(ctx, next, jetstream.WithGetMsgSubject(r.Subject))
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			return out, 0, nil
		case err != nil:
			return nil, 0, fmt.Errorf("%w: list dead letters: %v", errs.ErrUnavailable, err)
		}
		next = m.Sequence + 1
		if m.Header.Get(HeaderStream) != r.Stream || m.Header.Get(HeaderConsumer) != r.Consumer {
			continue // another consumer's, on a shared subject
		}
		if len(out) == n {
			return out, m.Sequence, nil
		}
		out = append(out, Letter{Seq: m.Sequence, Header: m.Header, Preview: m.Data[:min(len(m.Data), PreviewBytes)], Size: len(m.Data), Time: m.Time})
	}
}
