package push

import (
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// endpointLogEvery bounds the endpoint's WARNs: a flapping endpoint is
// logged going down at most once a minute (and coming back after each
// outage logged), with how many outages it left out.
const endpointLogEvery = time.Minute

// endpointLog follows whether the endpoint is up (for
// jetgate_push_endpoint_up) and logs each change, rate limited.
type endpointLog struct {
	log *slog.Logger
	up  prometheus.Gauge // 1 up, 0 held back
	now func() time.Time

	mu         sync.Mutex
	down       bool
	since      time.Time // down since
	lastLogged time.Time // the last "down" logged
	logged     bool      // this outage was logged: so is its end
	unlogged   int       // outages left out since the last logged
}

func newEndpointLog(log *slog.Logger, up prometheus.Gauge) *endpointLog {
	return &endpointLog{log: log, up: up, now: time.Now}
}

// wentDown records the endpoint held back after failures, the last being why.
func (e *endpointLog) wentDown(why string) {
	e.up.Set(0)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.down {
		return
	}
	now := e.now()
	e.down, e.since, e.logged = true, now, false
	if !e.lastLogged.IsZero() && now.Sub(e.lastLogged) < endpointLogEvery {
		e.unlogged++
		return
	}
	e.log.Warn("push endpoint down: holding back, one request at a time, until it answers; messages keep their deliveries",
		"error", why, "outages_not_logged", e.unlogged)
	e.lastLogged, e.logged, e.unlogged = now, true, 0
}

// answered records an answer from the endpoint: it is up.
func (e *endpointLog) answered() {
	e.up.Set(1)
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.down {
		return
	}
	e.down = false
	if e.logged {
		e.log.Warn("push endpoint back: pushing at full concurrency", "down_for", e.now().Sub(e.since).Round(time.Millisecond).String())
	}
}
