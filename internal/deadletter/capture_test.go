package deadletter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/natstest"
)

// agreement is a NATS server with the KV bucket "agreed", a context that
// ends with the test, and a JetStream on a connection of its own.
func agreement(t *testing.T) (*natsserver.Server, jetstream.JetStream, jetstream.KeyValue, context.Context) {
	t.Helper()
	ns := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), within)
	t.Cleanup(cancel)
	js, err := jetstream.New(natstest.Connect(t, ns))
	if err != nil {
		t.Fatal(err)
	}
	agreed, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "agreed"})
	if err != nil {
		t.Fatal(err)
	}
	return ns, js, agreed, ctx
}

// Replicas of many deployments start at once, each with the dead letter of
// a consumer of its own, some onto an advisory stream made before: the
// stream ends up capturing every one's advisories. Each adds its subjects to
// those it read; without their agreement in the KV record, a replica that
// read before another's update wrote over it, and that consumer's dead
// letters went uncaptured.
func TestReplicasStartingAtOnceCaptureEveryonesAdvisories(t *testing.T) {
	ns, js, agreed, ctx := agreement(t)
	const rounds, replicas = 3, 12
	var want []string
	for round := range rounds {
		var wg sync.WaitGroup
		fails := make([]error, replicas)
		for i := range replicas {
			r := Route{Stream: "ORDERS", Consumer: fmt.Sprintf("c%d-%d", round, i), OnTerm: i%2 == 0}
			want = append(want, r.subjects()...)
			own, err := jetstream.New(natstest.Connect(t, ns)) // each replica its own connection
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				cfg := jetstream.StreamConfig{Name: AdvisoryStream, Subjects: r.subjects(), Retention: jetstream.WorkQueuePolicy}
				_, fails[i] = capture(ctx, own, agreed, cfg)
			})
		}
		wg.Wait()
		for i, err := range fails {
			if err != nil {
				t.Fatalf("round %d, replica %d: %v", round, i, err)
			}
		}
		s, err := js.Stream(ctx, AdvisoryStream)
		if err != nil {
			t.Fatal(err)
		}
		have := s.CachedInfo().Config.Subjects
		if missing := slices.DeleteFunc(slices.Clone(want), func(x string) bool { return slices.Contains(have, x) }); len(missing) > 0 {
			t.Fatalf("round %d: the advisory stream lacks %d of %d subjects, e.g. %s", round, len(missing), len(want), missing[0])
		}
	}
}

// A record that is not a list of subjects is an error that names the
// bucket and the key, not a stream left without the replica's subjects.
func TestACorruptAgreementIsAnError(t *testing.T) {
	_, js, agreed, ctx := agreement(t)
	if _, err := agreed.Put(ctx, agreedKey, []byte("{")); err != nil {
		t.Fatal(err)
	}
	cfg := jetstream.StreamConfig{Name: AdvisoryStream, Subjects: Route{Stream: "ORDERS", Consumer: "billing"}.subjects()}
	_, err := capture(ctx, js, agreed, cfg)
	if err == nil || !strings.Contains(err.Error(), "KV agreed, key "+agreedKey) {
		t.Fatalf("capture over a corrupt record: %v; want an error naming the bucket and key", err)
	}
}
