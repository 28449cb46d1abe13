package consumer_test

import (
	"context"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// bind binds cfg on a fresh Sender and returns the server's config of the
// consumer afterwards, or Bind's error.
func bind(t *testing.T, js jetstream.JetStream, cfg consumer.Config) (jetstream.ConsumerConfig, error) {
	t.Helper()
	return bindLogged(t, js, cfg, io.Discard)
}

// bindLogged is bind with the consumer's log written to log.
func bindLogged(t *testing.T, js jetstream.JetStream, cfg consumer.Config, log io.Writer) (jetstream.ConsumerConfig, error) {
	t.Helper()
	nc := js.Conn()
	s, err := settle.NewSender(nc, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = consumer.Bind(ctx, js, cfg, consumer.Deps{
		Conn: nc, Sender: s, Keys: token.RandomKeyring(), Self: token.NewIssuerID(), Timeout: 2 * time.Second,
		Log: slog.New(slog.NewTextHandler(log, nil)),
	})
	if err != nil {
		return jetstream.ConsumerConfig{}, err
	}
	c, err := js.Consumer(ctx, cfg.Stream, cfg.Name)
	if err != nil {
		t.Fatal(err)
	}
	got := c.CachedInfo().Config
	got.Metadata = nil
	return got, nil
}

func bootstrapEnv(t *testing.T) jetstream.JetStream {
	t.Helper()
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	natstest.Stream(t, nc, stream, "orders.>")
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// On create: the three seeds explicitly, plus what the configuration
// names; everything else is the server's default.
func TestBootstrapCreatesWithTheSeedsAndTheNamedFields(t *testing.T) {
	js := bootstrapEnv(t)
	got, err := bind(t, js, consumer.Config{Stream: stream, Name: name, MaxDeliver: 5,
		BackOff: []time.Duration{time.Second, 5 * time.Second}, FilterSubjects: []string{"orders.eu.>"}})
	if err != nil {
		t.Fatal(err)
	}
	want := jetstream.ConsumerConfig{
		Name: name, Durable: name, DeliverPolicy: jetstream.DeliverAllPolicy, AckPolicy: jetstream.AckExplicitPolicy,
		// With a backoff the server takes its first step as ack_wait.
		AckWait: time.Second, MaxDeliver: 5, BackOff: []time.Duration{time.Second, 5 * time.Second},
		FilterSubject: "orders.eu.>", ReplayPolicy: jetstream.ReplayInstantPolicy, MaxWaiting: 512, MaxAckPending: 1024,
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("created\n got %+v\nwant %+v", got, want)
	}
}

// On update: only the named fields change; what an operator set by other
// means (max_deliver, a backoff, a description, max_waiting) survives a
// restart of jetgate.
func TestBootstrapUpdatesOnlyTheNamedFields(t *testing.T) {
	js := bootstrapEnv(t)
	ctx := context.Background()
	_, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Durable: name, AckPolicy: jetstream.AckExplicitPolicy, MaxDeliver: 5,
		BackOff: []time.Duration{time.Second, 10 * time.Second}, Description: "set with the NATS CLI", MaxWaiting: 2,
		DeliverPolicy: jetstream.DeliverNewPolicy,
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := bind(t, js, consumer.Config{Stream: stream, Name: name, MaxAckPending: 50})
	if err != nil {
		t.Fatalf("bind over an operator's consumer: %v", err)
	}
	if got.MaxDeliver != 5 || len(got.BackOff) != 2 || got.Description != "set with the NATS CLI" || got.MaxWaiting != 2 ||
		got.DeliverPolicy != jetstream.DeliverNewPolicy || got.AckWait != time.Second {
		t.Fatalf("fields not named were reset: %+v", got)
	}
	if got.MaxAckPending != 50 {
		t.Fatalf("max_ack_pending %d; want the named 50", got.MaxAckPending)
	}
}

// An ack_wait configured over a consumer whose backoff was set elsewhere
// does not hold (the server takes the backoff's first step), and a start
// says so, as the README promises (a reviewer saw it change nothing,
// silently).
func TestBootstrapWarnsOfABackoffThatOverridesAckWait(t *testing.T) {
	js := bootstrapEnv(t)
	if _, err := js.CreateConsumer(context.Background(), stream, jetstream.ConsumerConfig{
		Durable: name, AckPolicy: jetstream.AckExplicitPolicy, BackOff: []time.Duration{time.Second, 10 * time.Second},
	}); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	got, err := bindLogged(t, js, consumer.Config{Stream: stream, Name: name, AckWait: 45 * time.Second}, &log)
	if err != nil {
		t.Fatal(err)
	}
	if got.AckWait != time.Second {
		t.Fatalf("ack_wait %v; the server was expected to keep the backoff's first step", got.AckWait)
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "overrides the ack_wait configured") {
		t.Fatalf("no warning of the backoff overriding ack_wait 45s:\n%s", log.String())
	}
	// Named with its backoff, the configuration warns of nothing here.
	log.Reset()
	if _, err := bindLogged(t, js, consumer.Config{Stream: stream, Name: name, BackOff: []time.Duration{2 * time.Second}}, &log); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "level=WARN") {
		t.Fatalf("a warning where the file names the backoff:\n%s", log.String())
	}
}

// A named field the server cannot update stops start-up, naming the
// stream, the consumer and the field.
func TestBootstrapRefusesAChangedNonEditableField(t *testing.T) {
	js := bootstrapEnv(t)
	if _, err := js.CreateConsumer(context.Background(), stream, jetstream.ConsumerConfig{Durable: name, AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	last := jetstream.DeliverLastPolicy
	_, err := bind(t, js, consumer.Config{Stream: stream, Name: name, DeliverPolicy: &last})
	if err == nil || !strings.Contains(err.Error(), `"ORDERS"`) || !strings.Contains(err.Error(), `"billing"`) || !strings.Contains(err.Error(), "deliver policy") {
		t.Fatalf("bind with another deliver policy: %v; want the stream, consumer and field named", err)
	}
}
