package app

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
)

// A connection to NATS that stalls without closing (a proxy or a network
// that stops forwarding: no FIN, no RST) is found by nats.go's pings within
// pingEvery × (pingsOut+1), 30s, and meanwhile every call that waits on NATS
// times out. A stallWatch finds it sooner while jetgate is waiting on it:
// once the connection has carried messages out and none in for probeAfter,
// it asks the server for a PONG, and when none comes within probeWait it
// gives the connection up (nats.go reconnects and resubscribes, the replica
// pulls again). A connection that is merely quiet, nothing sent, is left to
// the pings; one that is busy both ways is never probed.
const (
	stallTick  = 250 * time.Millisecond
	probeAfter = 2 * time.Second
	probeWait  = 2 * time.Second
)

// stallWatch watches one connection; see above.
type stallWatch struct {
	nc     *nats.Conn
	log    *slog.Logger
	stalls prometheus.Counter
	stop   context.CancelFunc
	done   sync.WaitGroup
}

func newStallWatch(nc *nats.Conn, log *slog.Logger) *stallWatch {
	w := &stallWatch{nc: nc, log: log, stalls: prometheus.NewCounter(prometheus.CounterOpts{
		Name: "jetgate_nats_stalls_total",
		Help: "NATS connections given up because the server answered no PING while jetgate waited on it (a stalled network or proxy); each is replaced.",
	})}
	ctx, cancel := context.WithCancel(context.Background())
	w.stop = cancel
	w.done.Go(func() { w.watch(ctx) })
	return w
}

// close stops the watch and waits for it.
func (w *stallWatch) close() {
	w.stop()
	w.done.Wait()
}

func (w *stallWatch) watch(ctx context.Context) {
	t := time.NewTicker(stallTick)
	defer t.Stop()
	var in, out uint64  // the counts when jetgate last heard from NATS
	heard := time.Now() // when that was
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s := w.nc.Stats()
			if s.InMsgs != in || !w.nc.IsConnected() {
				in, out, heard = s.InMsgs, s.OutMsgs, now
				continue
			}
			if s.OutMsgs == out || now.Sub(heard) < probeAfter {
				continue // quiet, or not waited on for long yet
			}
			w.probe()
			s = w.nc.Stats()
			in, out, heard = s.InMsgs, s.OutMsgs, time.Now()
		}
	}
}

// probe asks for a PONG and gives the connection up if none comes.
func (w *stallWatch) probe() {
	err := w.nc.FlushTimeout(probeWait)
	if !errors.Is(err, nats.ErrTimeout) || !w.nc.IsConnected() {
		return // answered, or already away (nats.go is on it)
	}
	w.stalls.Inc()
	w.log.Warn("the NATS connection stalled: messages sent and none received for a while, and no answer to a PING; giving it up and reconnecting",
		"waited", probeAfter+probeWait, "server", w.nc.ConnectedUrlRedacted())
	if err := w.nc.ForceReconnect(); err != nil {
		w.log.Warn("could not give up the stalled NATS connection", "err", err)
	}
}
