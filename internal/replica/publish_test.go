package replica

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

func TestSubjectMatches(t *testing.T) {
	tests := []struct {
		pattern, subject string
		want             bool
	}{
		{"orders", "orders", true},
		{"orders", "order", false},
		{"orders", "orders.eu", false},
		{"orders.eu", "orders", false},
		{"orders.eu", "orders.eu", true},
		{"orders.eu", "orders.us", false},
		{"orders.*", "orders.eu", true},
		{"orders.*", "orders", false},
		{"orders.*", "orders.eu.paris", false},
		{"*.eu", "orders.eu", true},
		{"*.eu", "orders.us", false},
		{"*", "orders", true},
		{"*", "orders.eu", false},
		{"orders.*.paris", "orders.eu.paris", true},
		{"orders.*.paris", "orders.eu.lyon", false},
		{"orders.>", "orders.eu", true},
		{"orders.>", "orders.eu.paris", true},
		{"orders.>", "orders", false},
		{"orders.>", "payments.eu", false},
		{">", "orders", true},
		{">", "orders.eu.paris", true},
		{"*.>", "orders", false},
		{"*.>", "orders.eu", true},
		{"orders.eu.>", "orders.eu", false},
		{"ord*", "orders", false},
		{"ord*", "ord*", true},
		{"orders.>x", "orders.eu", false},
	}
	for _, tt := range tests {
		if got := subjectMatches(tt.pattern, tt.subject); got != tt.want {
			t.Errorf("subjectMatches(%q, %q) = %t, want %t", tt.pattern, tt.subject, got, tt.want)
		}
	}
}

func TestValidSubject(t *testing.T) {
	tests := []struct {
		subject string
		want    error
	}{
		{"orders", nil},
		{"orders.eu.paris", nil},
		{"orders-1.eu_2", nil},
		{"a.$b", nil},
		{"$JS.API.STREAM.DELETE.ORDERS", errs.ErrSubjectNotAllowed},
		{"$SYS.REQ", errs.ErrSubjectNotAllowed},
		{"$", errs.ErrSubjectNotAllowed},
		{"_JETGATE.RESET.ORDERS.billing", errs.ErrSubjectNotAllowed},
		{"_JETGATE.SETTLE.x", errs.ErrSubjectNotAllowed},
		{"_INBOX.abc.1", errs.ErrSubjectNotAllowed},
		{"_jetgate.reset", nil}, // subjects are case-sensitive: not the gateway's
		{"orders._JETGATE.x", nil},
		{"", errs.ErrInvalidArgument},
		{"orders.*", errs.ErrInvalidArgument},
		{"orders.>", errs.ErrInvalidArgument},
		{"*", errs.ErrInvalidArgument},
		{">", errs.ErrInvalidArgument},
		{"ord*ers", errs.ErrInvalidArgument},
		{"orders eu", errs.ErrInvalidArgument},
		{"orders\teu", errs.ErrInvalidArgument},
		{"orders\r\nPUB x 1", errs.ErrInvalidArgument},
		{"orders\n", errs.ErrInvalidArgument},
		{" orders", errs.ErrInvalidArgument},
		{".orders", errs.ErrInvalidArgument},
		{"orders.", errs.ErrInvalidArgument},
		{"orders..eu", errs.ErrInvalidArgument},
		{".", errs.ErrInvalidArgument},
	}
	for _, tt := range tests {
		err := validSubject(tt.subject)
		if tt.want == nil {
			if err != nil {
				t.Errorf("validSubject(%q) = %v, want nil", tt.subject, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("validSubject(%q) = %v, want %v", tt.subject, err, tt.want)
		}
		if tt.want == errs.ErrSubjectNotAllowed && errors.Is(err, errs.ErrInvalidArgument) {
			t.Errorf("validSubject(%q) = %v, is both errs.ErrSubjectNotAllowed and errs.ErrInvalidArgument", tt.subject, err)
		}
	}
}

// A caller that publishes to a subject outside the stream, again and again,
// must not cost a NATS request each time: a miss reloads the stream's
// subjects at most once an interval. A subject added to the stream (with the
// NATS CLI, say) is still picked up once the interval has passed.
func TestPublishOutsideTheStreamReloadsSubjectsAtMostOncePerInterval(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	stream := natstest.Stream(t, nc, "ORDERS", "orders.>")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn := natstest.Connect(t, ns) // the replica's
	r, err := New(ctx, Options{
		Conn:      conn,
		Consumers: []consumer.Config{{Stream: "ORDERS", Name: "billing", AckWait: 30 * time.Second, MaxAckPending: 1024}},
		Keys:      token.RandomKeyring(),
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	now := time.Now()
	r.subjects.now = func() time.Time { return now }

	// Count the stream info requests on the wire. The server delivers what
	// one connection sends in order, so once a mark sent on the replica's
	// connection arrives, every request the replica sent before it has too.
	seen := make(chan *nats.Msg, 1024)
	for _, subject := range []string{"$JS.API.STREAM.INFO.>", "test.mark"} {
		if _, err := nc.ChanSubscribe(subject, seen); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil { // the server has the subscriptions
		t.Fatal(err)
	}
	infos := 0
	infoRequests := func() int {
		t.Helper()
		if err := conn.Publish("test.mark", nil); err != nil {
			t.Fatal(err)
		}
		for {
			select {
			case m := <-seen:
				if m.Subject == "test.mark" {
					return infos
				}
				infos++
			case <-ctx.Done():
				t.Fatal("the mark did not arrive")
			}
		}
	}
	publish := func(subject string) error {
		_, err := r.Publish(ctx, PublishRequest{Stream: "ORDERS", Subject: subject, Data: []byte("x")})
		return err
	}
	if err := publish("orders.new"); err != nil {
		t.Fatalf("publish to a subject of the stream: %v", err)
	}

	now = now.Add(subjectsReload) // the interval since start-up has passed
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if err := publish("payments.new"); !errors.Is(err, errs.ErrSubjectNotAllowed) {
				t.Errorf("publish outside the stream = %v, want errs.ErrSubjectNotAllowed", err)
			}
		})
	}
	wg.Wait()
	if n := infoRequests(); n != 1 {
		t.Fatalf("50 publishes outside the stream sent %d stream info requests; want 1", n)
	}

	cfg := stream.CachedInfo().Config
	cfg.Subjects = append(cfg.Subjects, "payments.>")
	js, err := jetstream.New(natstest.Connect(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := publish("payments.new"); !errors.Is(err, errs.ErrSubjectNotAllowed) {
		t.Fatalf("publish within the interval after the reload = %v, want errs.ErrSubjectNotAllowed", err)
	}
	if n := infoRequests(); n != 1 {
		t.Fatalf("%d stream info requests; want still 1 within the interval", n)
	}

	now = now.Add(subjectsReload)
	for range 3 {
		if err := publish("payments.new"); err != nil {
			t.Fatalf("publish to the added subject once the interval passed: %v", err)
		}
	}
	if n := infoRequests(); n != 2 {
		t.Fatalf("%d stream info requests; want 2: one more reload, then the subject is known", n)
	}

	// A subject taken off the stream (to give it to another) is refused
	// once the interval passed: a known subject is checked again then too.
	cfg.Subjects = slices.DeleteFunc(cfg.Subjects, func(x string) bool { return x == "payments.>" })
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	now = now.Add(subjectsReload)
	if err := publish("payments.new"); !errors.Is(err, errs.ErrSubjectNotAllowed) {
		t.Fatalf("publish to a subject taken off the stream, once the interval passed = %v, want errs.ErrSubjectNotAllowed", err)
	}
	if err := publish("orders.new"); err != nil {
		t.Fatalf("publish to a subject of the stream: %v", err)
	}
	if n := infoRequests(); n != 3 {
		t.Fatalf("%d stream info requests; want 3: one reload for the interval", n)
	}
}
