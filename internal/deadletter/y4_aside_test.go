package deadletter

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natstest"
)

// One consumer's dead letters that cannot be stored (its dead-letter stream
// full with discard new, or deleted) were each held in the worker's room
// (workerMaxAckPending), which every consumer shares: once 4,096 waited,
// no other consumer's dead letter was copied for as long as the trouble
// lasted. Another consumer's letters go on now, and the first's are all
// stored once its stream takes them again.
func TestOneConsumersDeadLettersThatCannotBeStoredHoldNoOthersBack(t *testing.T) {
	shipping := Route{Stream: "ORDERS", Consumer: "shipping", Subject: "dlqs.shipping"}
	billing := Route{Stream: "ORDERS", Consumer: "billing", Subject: dlqSubject}
	const advised = workerMaxAckPending + 100
	for _, tc := range []struct {
		name          string
		trouble, ends func(e *env)
	}{
		{"full", func(e *env) {
			e.dlqs(jetstream.StreamConfig{MaxMsgs: 1, Discard: jetstream.DiscardNew})
			if _, err := e.js.Publish(context.Background(), "dlqs.other", nil); err != nil {
				e.t.Fatal(err)
			}
		}, func(e *env) { e.dlqs(jetstream.StreamConfig{MaxMsgs: -1, Discard: jetstream.DiscardNew}) }},
		{"deleted", func(e *env) {
			if err := e.js.DeleteStream(context.Background(), "DLQS"); err != nil {
				e.t.Fatal(err)
			}
		}, func(e *env) { e.dlqs(jetstream.StreamConfig{}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.dlqs(jetstream.StreamConfig{})
			e.startWith([]Route{shipping, billing}, nil)
			tc.trouble(e)
			e.advise(advised)
			e.publish("billing's")
			seq := e.runOut()
			start := time.Now()
			natstest.Eventually(t, within, "billing's dead letter while shipping's cannot be stored", func() bool {
				return len(e.deadLetters()) == 1
			})
			t.Logf("billing's dead letter %v after its message ran out", time.Since(start))
			if got := e.deadLetters()[0].Header.Get(HeaderSeq); got != "1" || seq != 1 {
				t.Fatalf("dead letter of seq %s; want billing's %d", got, seq)
			}
			tc.ends(e)
			start = time.Now()
			natstest.Eventually(t, 6*within, "every one of shipping's dead letters once its stream takes them", func() bool {
				return e.shippingLetters() == advised
			})
			t.Logf("shipping's %d dead letters stored %v after its stream took them again", advised, time.Since(start))
			natstest.Eventually(t, within, "the advisory stream worked off", func() bool {
				return e.streamState(AdvisoryStream).Msgs == 0
			})
		})
	}
}

// dlqs makes (or updates) shipping's dead-letter stream DLQS, on dlqs.>.
func (e *env) dlqs(cfg jetstream.StreamConfig) {
	e.t.Helper()
	cfg.Name, cfg.Subjects = "DLQS", []string{"dlqs.>"}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := e.js.CreateOrUpdateStream(ctx, cfg); err != nil {
		e.t.Fatal(err)
	}
}

// The advisories of a consumer this deployment does not serve (another
// deployment's, or one taken out of the configuration while something still
// uses it) were held for ever, each in the worker's room: 4,096 of them and
// no dead letter of the deployment's own consumers was copied. They hold
// nothing back now, and a worker that routes that consumer copies them all
// once it runs.
func TestAnotherDeploymentsAdvisoriesHoldNothingBack(t *testing.T) {
	shipping := Route{Stream: "ORDERS", Consumer: "shipping", Subject: "dlqs.shipping"}
	const advised = workerMaxAckPending + 100
	e := newEnv(t)
	e.dlqs(jetstream.StreamConfig{})
	stop := e.startWith([]Route{shipping}, nil) // shipping's deployment, then down
	stop()
	e.startWith([]Route{{Stream: "ORDERS", Consumer: "billing", Subject: dlqSubject}}, nil)
	e.advise(advised)
	e.publish("billing's")
	e.runOut()
	natstest.Eventually(t, within, "billing's dead letter behind shipping's advisories", func() bool {
		return len(e.deadLetters()) == 1
	})
	e.startWith([]Route{shipping}, nil) // shipping's deployment back
	natstest.Eventually(t, 6*within, "every one of shipping's dead letters", func() bool {
		return e.shippingLetters() == advised
	})
}

// shippingLetters counts the dead letters of shipping in DLQS (0: none, or
// no DLQS).
func (e *env) shippingLetters() uint64 {
	s, err := e.js.Stream(context.Background(), "DLQS")
	if err != nil {
		return 0
	}
	info, err := s.Info(context.Background(), jetstream.WithSubjectFilter("dlqs.shipping"))
	if err != nil {
		return 0
	}
	return info.State.Subjects["dlqs.shipping"]
}

// A deployment whose NATS user may not make WaitingStream, or whose account
// is at its limit of streams, still starts and copies dead letters (a
// consumer in trouble then holds its places, as before): the stream is
// taken here by another that holds its subjects.
func TestWithoutTheWaitingStreamDeadLettersAreStillCopied(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := e.js.CreateStream(ctx, jetstream.StreamConfig{Name: "SQUATTER", Subjects: []string{waitingPrefix + ">"}}); err != nil {
		t.Fatal(err)
	}
	e.startWith([]Route{{Stream: "ORDERS", Consumer: "billing", Subject: dlqSubject}}, nil)
	e.publish("billing's")
	e.runOut()
	natstest.Eventually(t, within, "billing's dead letter without "+WaitingStream, func() bool {
		return len(e.deadLetters()) == 1
	})
}
