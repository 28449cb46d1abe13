package push_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/push"
	"github.com/jetgate/jetgate/internal/replica"
)

// A replica whose second push block cannot be made (its signing secret
// file is gone) refuses to start, saying why. Its close used to wait for
// ever for that pusher's Run, never started.
func TestAPushBlockThatCannotBeMadeFailsTheStart(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	good := push.Config{Stream: stream, Consumer: name, URL: rc.URL}
	bad := push.Config{Stream: stream, Consumer: name, URL: rc.URL, SigningSecretFile: filepath.Join(t.TempDir(), "gone")}
	done := make(chan error, 1)
	go func() {
		r, err := replica.New(context.Background(), replica.Options{
			Conn: natstest.Connect(t, e.ns), Consumers: []consumer.Config{consumerCfg()}, Pushes: []push.Config{good, bad},
			Keys: keyring, RequestTimeout: 2 * time.Second,
		})
		if err == nil {
			r.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "gone") {
			t.Fatalf("start with a push block whose secret file is gone: %v; want an error naming the file", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the replica did not return from its start within 15s")
	}
}
