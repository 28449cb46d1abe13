package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// natsMode consumes with nats.go alone, from a durable of its own that
// copies the settings of jetgate's consumer and takes only its subject. The
// workers share one connection, as jetgate's workers share one gRPC
// connection.
type natsMode struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	cons   jetstream.Consumer
	stream string
	name   string // the durable's
	double bool   // DoubleAck rather than a fire-and-forget Ack
	batch  int
	// maxAckPending, if set, is the durable's; else it is jetgate's
	// consumer's.
	maxAckPending int
}

func newNATSMode(ctx context.Context, mode, subject string, o Options) (*natsMode, error) {
	nc, err := nats.Connect(o.NATSURL, nats.Name("jetgate-bench-"+mode))
	if err != nil {
		return nil, fmt.Errorf("connect to NATS: %w", err)
	}
	m := &natsMode{nc: nc, stream: o.Stream, name: o.Consumer + "-bench-" + mode, double: mode == ModeNATSDouble, batch: o.Batch}
	if err := m.bind(ctx, subject, o); err != nil {
		nc.Close()
		return nil, err
	}
	return m, nil
}

// bind creates the mode's durable: jetgate's consumer's configuration,
// another name, the mode's subject, and only messages published from now
// on (a durable left by an interrupted run against a lasting server is
// replaced).
func (m *natsMode) bind(ctx context.Context, subject string, o Options) error {
	js, err := jetstream.New(m.nc)
	if err != nil {
		return err
	}
	gw, err := js.Consumer(ctx, o.Stream, o.Consumer)
	if err != nil {
		return fmt.Errorf("look up jetgate's consumer %q: %w", o.Consumer, err)
	}
	cfg := gw.CachedInfo().Config
	cfg.Durable, cfg.Name, cfg.Description, cfg.Metadata = m.name, "", "jetgate-bench "+subject, nil
	cfg.FilterSubject, cfg.FilterSubjects = subject, nil
	cfg.DeliverPolicy, cfg.OptStartSeq, cfg.OptStartTime = jetstream.DeliverNewPolicy, 0, nil
	if m.maxAckPending > 0 {
		cfg.MaxAckPending = m.maxAckPending
	}
	if err := js.DeleteConsumer(ctx, o.Stream, m.name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("delete old durable %q: %w", m.name, err)
	}
	if m.cons, err = js.CreateConsumer(ctx, o.Stream, cfg); err != nil {
		return fmt.Errorf("create durable %q: %w", m.name, err)
	}
	m.js = js
	return nil
}

func (m *natsMode) newWorker() worker { return m }

// round fetches a batch and settles each message as it arrives.
func (m *natsMode) round(ctx context.Context, took func(int)) error {
	b, err := m.cons.Fetch(m.batch, jetstream.FetchMaxWait(time.Second))
	if err != nil {
		return err
	}
	for msg := range b.Messages() {
		if err := m.settle(ctx, msg); err != nil {
			return err
		}
		took(1)
	}
	return b.Error()
}

func (m *natsMode) settle(ctx context.Context, msg jetstream.Msg) error {
	if m.double {
		return msg.DoubleAck(ctx)
	}
	return msg.Ack()
}

// drained waits until the server has the acks sent so far.
func (m *natsMode) drained() error { return m.nc.Flush() }

// settledDown has nothing to wait for: every Fetch of the workers ran to
// its end.
func (m *natsMode) settledDown(context.Context) error { return nil }

func (m *natsMode) fetchOne(ctx context.Context, pub func(context.Context) error) (time.Duration, error) {
	if err := pub(ctx); err != nil {
		return 0, err
	}
	t0 := time.Now()
	for time.Since(t0) < fetchOneLimit {
		b, err := m.cons.Fetch(1, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return 0, err
		}
		msg, ok := <-b.Messages()
		if !ok {
			if err := b.Error(); err != nil {
				return 0, err
			}
			continue
		}
		d := time.Since(t0)
		return d, m.settle(ctx, msg)
	}
	return 0, fmt.Errorf("the message published was not delivered in %v", fetchOneLimit)
}

// close deletes the mode's durable and closes its connection.
func (m *natsMode) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.js.DeleteConsumer(ctx, m.stream, m.name)
	m.nc.Close()
}
