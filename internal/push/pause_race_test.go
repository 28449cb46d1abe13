package push_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/push"
)

// The relay hears pause advisories from the bind on, before the pushers
// start: an advisory handled while a replica starts raced the map of its
// pushers being written (-race).
func TestAPauseWhileAReplicaStartsIsNoDataRace(t *testing.T) {
	e := newEnv(t)
	rc := newReceiver(t)
	pc := push.Config{URL: rc.URL, Concurrency: 1}
	_, stop := e.replica(consumerCfg(), pc) // makes the consumer
	stop()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { // an operator pausing and resuming, over and over
		for ctx.Err() == nil {
			_, _ = e.js.PauseConsumer(ctx, stream, name, time.Now().Add(time.Hour))
			_, _ = e.js.ResumeConsumer(ctx, stream, name)
		}
	})
	for range 20 {
		_, stop := e.replica(consumerCfg(), pc)
		stop()
	}
	cancel()
	wg.Wait()
}
