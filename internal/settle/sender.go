package settle

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/pull"
)

var (
	// ErrNoResponders is a settle that no server took: the consumer was
	// deleted, its leader is being elected, or the server is unreachable.
	// The caller finds out which.
	ErrNoResponders = errors.New("no responders")

	// ErrUnconfirmed is a settle that was sent but not confirmed: it may or
	// may not have been applied.
	ErrUnconfirmed = fmt.Errorf("%w: the server did not confirm the settle", errs.ErrUnavailable)
)

// Sender sends settles as requests on one subscription of its own. Every
// settle gets its own reply subject under it, and the sender routes each
// reply to whoever opened that subject. Owning the subscription, rather than
// calling nats.go's blocking Request once per token, lets a batch be
// pipelined: all of it published, then all replies awaited together.
type Sender struct {
	nc      *nats.Conn
	timeout time.Duration
	prefix  string
	sub     *nats.Subscription

	mu     sync.Mutex
	routes map[uint64]func(*nats.Msg)
	// dropped is closed as the connection drops, and then replaced: a reply
	// to a settle sent on the dropped connection never comes.
	dropped atomic.Pointer[chan struct{}]
	status  chan nats.Status
	watched chan struct{} // closed once watch has returned
}

// NewSender subscribes to its reply subjects. timeout bounds how long a
// batch waits for its confirmations.
func NewSender(nc *nats.Conn, timeout time.Duration) (*Sender, error) {
	s := &Sender{nc: nc, timeout: timeout, prefix: nats.NewInbox(), routes: make(map[uint64]func(*nats.Msg)), watched: make(chan struct{})}
	first := make(chan struct{})
	s.dropped.Store(&first)
	sub, err := nc.Subscribe(s.prefix+".*", s.dispatch)
	if err != nil {
		return nil, fmt.Errorf("subscribe settle inbox: %w", err)
	}
	// A reply dropped as a slow consumer would fail its settle; what
	// arrives here is bounded by the settles in flight.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("settle inbox limits: %w", err)
	}
	s.sub = sub
	s.status = nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CLOSED)
	go s.watch()
	return s, nil
}

// Close stops the reply subscription.
func (s *Sender) Close() error {
	s.nc.RemoveStatusListener(s.status)
	<-s.watched
	return s.sub.Unsubscribe()
}

// watch closes dropped each time the connection drops, so that the settles
// waiting on it are unconfirmed at once rather than after the timeout: their
// retry, once NATS is back, may still be within their leases.
func (s *Sender) watch() {
	defer close(s.watched)
	for range s.status {
		fresh := make(chan struct{})
		close(*s.dropped.Swap(&fresh))
	}
}

// open returns a fresh reply subject whose messages go to fn, and the id that
// closes it. fn runs on the subscription's goroutine and must not block.
// The id is random: a client that saw some of the sender's reply subjects
// (another user of the account who may publish on _INBOX.>) cannot answer
// the next settle or forward in the server's or the issuer's place by
// counting on, with a "no responders" status that no signature covers.
func (s *Sender) open(fn func(*nats.Msg)) (string, uint64) {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:]) // never fails (crypto/rand); outside the lock, which every reply takes
		id := binary.LittleEndian.Uint64(b[:])
		s.mu.Lock()
		taken := s.routes[id] != nil
		if !taken {
			s.routes[id] = fn
		}
		s.mu.Unlock()
		if !taken {
			return s.prefix + "." + strconv.FormatUint(id, 36), id
		}
	}
}

func (s *Sender) close(id uint64) {
	s.mu.Lock()
	delete(s.routes, id)
	s.mu.Unlock()
}

func (s *Sender) dispatch(m *nats.Msg) {
	id, err := strconv.ParseUint(m.Subject[len(s.prefix)+1:], 36, 64)
	if err != nil {
		return
	}
	s.mu.Lock()
	fn := s.routes[id]
	s.mu.Unlock()
	if fn != nil {
		fn(m)
	}
}

// Send publishes payload to every subject as a request and waits for all the
// replies, pipelined: nothing waits for one reply before sending the next.
// Each error is nil (confirmed), ErrNoResponders, ErrUnconfirmed (sent, no
// answer in time, the connection dropped (but for a Nak: isNak), or the
// caller left) or errs.ErrUnavailable (not sent).
func (s *Sender) Send(ctx context.Context, subjects []string, payload []byte) []error {
	res := make([]error, len(subjects))
	if err := ctx.Err(); err != nil {
		return fillErr(res, err)
	}
	type reply struct {
		i int
		m *nats.Msg
	}
	replies := make(chan reply, len(subjects))
	ids := make([]uint64, 0, len(subjects))
	var dropped <-chan struct{} // nil: a Nak waits on
	if !isNak(payload) {
		dropped = *s.dropped.Load() // before any is sent
	}
	defer func() {
		for _, id := range ids {
			s.close(id)
		}
	}()
	pending := 0
	for i, subj := range subjects {
		rsubj, id := s.open(func(m *nats.Msg) {
			select {
			case replies <- reply{i, m}:
			default:
			}
		})
		ids = append(ids, id)
		if res[i] = s.publish(subj, rsubj, payload); res[i] == nil {
			pending++
		}
	}
	answered := make([]bool, len(subjects))
	timer := time.NewTimer(s.timeout)
	defer timer.Stop()
	for pending > 0 {
		select {
		case r := <-replies:
			if answered[r.i] {
				continue
			}
			answered[r.i] = true
			pending--
			switch err := pull.ReplyStatus(r.m); {
			case errors.Is(err, nats.ErrNoResponders):
				res[r.i] = ErrNoResponders
			case err != nil:
				res[r.i] = fmt.Errorf("%w: settle answered with %v", errs.ErrUnavailable, err)
			}
		case <-timer.C:
			return markUnanswered(res, answered, fmt.Errorf("%w in %v", ErrUnconfirmed, s.timeout))
		case <-dropped:
			return markUnanswered(res, answered, fmt.Errorf("%w: the connection to NATS dropped", ErrUnconfirmed))
		case <-ctx.Done():
			return markUnanswered(res, answered, fmt.Errorf("%w: %w", ErrUnconfirmed, ctx.Err()))
		}
	}
	return res
}

// SendInOrder settles a batch on one consumer that the server settles in
// the order it receives them: one with a single replica, whose settles go
// through one queue with no raft log between it and the reply. Only the
// last settle is a request, and its reply confirms the whole batch, sent
// in order on one connection before it: the server has then applied every
// settle before the last, as it would have before answering each. So the
// server handles one reply a batch rather than one a settle.
//
// A batch whose connection was re-established before the reply came may
// have lost what it sent on the old one: all but the last are then
// unconfirmed, and the last too where Send noticed the drop first. The
// caller orders the batch: a settle the server would not answer (an ack
// above the consumer's next delivery, after a reset) must not be last.
func (s *Sender) SendInOrder(ctx context.Context, subjects []string, payload []byte) []error {
	last := len(subjects) - 1
	if last < 1 {
		return s.Send(ctx, subjects, payload)
	}
	res := make([]error, len(subjects))
	if err := ctx.Err(); err != nil {
		return fillErr(res, err)
	}
	reconnects := s.nc.Stats().Reconnects
	for i, subj := range subjects[:last] {
		res[i] = s.publish(subj, "", payload)
	}
	res[last] = s.Send(ctx, subjects[last:], payload)[0]
	confirmed := res[last]
	if confirmed == nil && s.nc.Stats().Reconnects != reconnects {
		confirmed = fmt.Errorf("%w: the connection to NATS was re-established while the batch was sent", ErrUnconfirmed)
	} else if confirmed != nil && !errors.Is(confirmed, ErrNoResponders) {
		confirmed = fmt.Errorf("%w: the settle that confirms the batch failed: %w", ErrUnconfirmed, confirmed)
	}
	for i := range subjects[:last] {
		if res[i] == nil {
			res[i] = confirmed
		}
	}
	return res
}

// isNak reports whether payload is a Nak's. A Nak in flight as the
// connection drops waits out its timeout rather than ending at once: one
// the server applied redelivered its message at once, and a retry sent
// within the lease would land on that delivery. Its issuer answers a retry
// as done (lease.Table.Begin); a replica adopting its token has only the
// settle ledger, which can lose its record with a server killed hard. Past
// the timeout a short lease has ended, and the retry is refused.
func isNak(payload []byte) bool { return bytes.HasPrefix(payload, []byte("-NAK")) }

// publish sends one settle, with a reply subject or none, or says why it
// did not.
func (s *Sender) publish(subj, reply string, payload []byte) error {
	// A settle must never wait in the client's reconnect buffer: sent
	// after its lease's deadline, it would land on the next delivery.
	if !s.nc.IsConnected() {
		return fmt.Errorf("%w: not connected", errs.ErrUnavailable)
	}
	if err := s.nc.PublishMsg(&nats.Msg{Subject: subj, Reply: reply, Data: payload}); err != nil {
		return fmt.Errorf("%w: publish settle: %v", errs.ErrUnavailable, err)
	}
	return nil
}

func markUnanswered(res []error, answered []bool, err error) []error {
	for i := range res {
		if res[i] == nil && !answered[i] {
			res[i] = err
		}
	}
	return res
}

func fillErr(res []error, err error) []error {
	for i := range res {
		res[i] = err
	}
	return res
}
