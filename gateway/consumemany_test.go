package gateway_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/natstest"
)

// REST Consume streams all reach the services over the REST side's one
// in-memory gRPC connection, so that connection must not cap them at what
// one gRPC caller's connection may run at once (1024): past it, a REST
// caller's stream would hang unanswered until another ended.
func TestRESTConsumeIsNotCappedByTheInnerConnection(t *testing.T) {
	a := startApp(t, nil)
	const streams = 1100
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	var first atomic.Int64 // streams that answered with their first line
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for range streams {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+a.HTTP+consumerPath+":consume",
				strings.NewReader(`{"maxMessages":1,"heartbeat":"0.5s"}`))
			if err != nil {
				return
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return
			}
			if bufio.NewScanner(resp.Body).Scan() {
				first.Add(1)
			}
			<-ctx.Done()
		})
	}
	natstest.Eventually(t, 60*time.Second, "every REST Consume stream answering", func() bool {
		return first.Load() == streams
	})
}
