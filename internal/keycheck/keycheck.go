// Package keycheck finds, as a replica starts, peers whose token keys do not
// match its own: the two could not settle each other's tokens, nor take each
// other's forwarded settles. Every replica answers a request on Subject with
// a MAC, under its signing key, of a fixed text and the asker's nonce; the
// asker verifies each answer with its own keyring, and each answer says
// whether the peer could verify the asker's MAC, so both directions count.
// A rotation done as the README says (the new key verify-only everywhere
// first) never shows as a mismatch. The check runs again, quietly, every
// RecheckEvery, so that the count falls once the odd peer is restarted with
// the right keys, and rises for a peer whose answer the first missed.
package keycheck

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	mrand "math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/jetgate/jetgate/internal/token"
)

// Subject is where every replica answers the check.
const Subject = "_JETGATE.KEYCHECK"

// DefaultWindow is how long a check waits for its peers' answers.
const DefaultWindow = 2 * time.Second

// RecheckEvery is how often a replica checks again (within a tenth either
// way): one request, answered by every replica.
const RecheckEvery = 30 * time.Second

// maxPeers bounds the answers one check takes.
const maxPeers = 4096

// domain is the fixed text every MAC of the check covers.
var domain = []byte("jetgate token key check")

// Options configure a Checker.
type Options struct {
	Conn *nats.Conn
	Keys *token.Keyring
	// Logger gets the mismatch warnings; nil is slog.Default().
	Logger *slog.Logger
	// Metrics registers jetgate_token_key_mismatch; nil leaves it
	// unregistered.
	Metrics prometheus.Registerer
	// Window is how long the check collects answers; 0 is DefaultWindow.
	Window time.Duration
	// Recheck is how often the check runs again; 0 is RecheckEvery.
	Recheck time.Duration
}

// request is what the asker sends; answer is what each peer sends back.
type request struct {
	ID    string `json:"id"`
	Nonce string `json:"nonce"`
	MAC   string `json:"mac"`
	Again bool   `json:"again,omitempty"` // a check again: its peers warned at the first
}

type answer struct {
	ID         string `json:"id"`
	MAC        string `json:"mac"`
	KnowsYours bool   `json:"knows_yours"`
}

// Checker answers its peers' checks for as long as it runs, and checks its
// own key against theirs once, as it starts.
type Checker struct {
	o          Options
	log        *slog.Logger
	id         string
	sub        *nats.Subscription
	cancel     context.CancelFunc
	done       chan struct{} // the first check has reported
	stopped    chan struct{} // the checks have ended
	mismatched atomic.Int64
	gauge      prometheus.Gauge
}

// Start subscribes to Subject and starts the check in the background; Done
// closes when it has finished. Close stops both.
func Start(o Options) (*Checker, error) {
	if o.Window <= 0 {
		o.Window = DefaultWindow
	}
	if o.Recheck <= 0 {
		o.Recheck = RecheckEvery
	}
	c := &Checker{o: o, log: o.Logger, id: rand.Text(), done: make(chan struct{}), stopped: make(chan struct{})}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.gauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "jetgate_token_key_mismatch",
		Help: "Peers whose token keys do not match this replica's, as its last check found them (at start, then every 30s): settles between them fail. 0 when all match; the odd one out counts every other replica.",
	})
	if o.Metrics != nil {
		if err := o.Metrics.Register(c.gauge); err != nil {
			return nil, err
		}
	}
	var err error
	if c.sub, err = o.Conn.Subscribe(Subject, c.answer); err != nil {
		return nil, err
	}
	// The server has the subscription before anyone can ask it: two
	// replicas starting together see at least one another.
	_ = o.Conn.FlushTimeout(o.Window)
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go c.run(ctx)
	return c, nil
}

// run checks once, and again every Recheck until the checker closes; a
// check that could not run (NATS away) leaves the count as it was.
func (c *Checker) run(ctx context.Context) {
	defer close(c.stopped)
	bad := c.check(ctx, true)
	close(c.done)
	for {
		// Jittered, so that replicas started together by a rollout do not
		// ask in step.
		t := time.NewTimer(c.o.Recheck*9/10 + mrand.N(c.o.Recheck/5+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		now := c.check(ctx, bad < 0) // loud until one has run: its peers warn of a mismatch then
		switch {
		case now < 0:
			continue
		case bad < 0:
		case now == 0 && bad > 0:
			c.log.Info("token key check: every peer's key matches now", "key_id", c.keyID())
		case now > bad:
			c.log.Warn("TOKEN KEY MISMATCH: more peer replicas' token keys do not match this one's; settles between them will fail. Give every replica the same token key file",
				"peers", now, "key_id", c.keyID())
		}
		bad = now
	}
}

// Done is closed once the start-up check has reported, or was stopped.
func (c *Checker) Done() <-chan struct{} { return c.done }

// Mismatched is the number of peers the last check found with keys that
// do not match.
func (c *Checker) Mismatched() int { return int(c.mismatched.Load()) }

// Close stops the check and the answering.
func (c *Checker) Close() {
	c.cancel()
	<-c.stopped
	_ = c.sub.Unsubscribe()
}

// answer answers a peer's check, and warns here too when its key does not
// verify: the peer warns as well, but the operator may be watching either.
func (c *Checker) answer(m *nats.Msg) {
	var req request
	if json.Unmarshal(m.Data, &req) != nil || req.ID == "" || req.ID == c.id || m.Reply == "" {
		return
	}
	knows := c.o.Keys.Verify(req.MAC, domain, []byte(req.Nonce))
	if !knows && !req.Again {
		c.log.Warn("TOKEN KEY MISMATCH: a replica starting now signs with a token key this replica does not have; settles between the two will fail. Give every replica the same token key file",
			"peer", req.ID, "peer_key_id", keyID(req.MAC), "key_id", c.keyID())
	}
	b, _ := json.Marshal(answer{ID: c.id, MAC: c.o.Keys.Sign(domain, []byte(req.Nonce)), KnowsYours: knows})
	_ = m.Respond(b)
}

// check asks every peer once, counts those that do not match, and returns
// the count (-1: not run, or stopped); the first (loud) warns of each.
func (c *Checker) check(ctx context.Context, loud bool) int {
	nonce := rand.Text()
	answers := make(chan *nats.Msg, maxPeers) // a full channel drops answers (a slow consumer)
	inbox := c.o.Conn.NewRespInbox()
	sub, err := c.o.Conn.ChanSubscribe(inbox, answers)
	level := slog.LevelWarn
	if !loud {
		level = slog.LevelInfo // a check again, while NATS is away
	}
	if err != nil {
		c.log.Log(ctx, level, "token key check not run", "err", err)
		return -1
	}
	defer func() { _ = sub.Unsubscribe() }()
	req, _ := json.Marshal(request{ID: c.id, Nonce: nonce, MAC: c.o.Keys.Sign(domain, []byte(nonce)), Again: !loud})
	if err := c.o.Conn.PublishRequest(Subject, inbox, req); err != nil {
		c.log.Log(ctx, level, "token key check not run", "err", err)
		return -1
	}
	// A connection that stalls takes the request and brings no answer: a
	// check of no peer, which would clear the count.
	if err := c.o.Conn.FlushTimeout(c.o.Window); err != nil {
		c.log.Log(ctx, level, "token key check not run", "err", err)
		return -1
	}
	timer := time.NewTimer(c.o.Window)
	defer timer.Stop()
	peers, bad := make(map[string]bool), 0
	for {
		select {
		case <-ctx.Done():
			return -1
		case m := <-answers:
			var a answer
			if json.Unmarshal(m.Data, &a) != nil || a.ID == "" || a.ID == c.id || peers[a.ID] {
				continue
			}
			peers[a.ID] = true
			if ours := c.o.Keys.Verify(a.MAC, domain, []byte(nonce)); !ours || !a.KnowsYours {
				bad++
				if !loud {
					continue
				}
				c.log.Warn("TOKEN KEY MISMATCH: a peer replica's token key does not match this one's; settles between the two will fail. Give every replica the same token key file",
					"peer", a.ID, "peer_key_id", keyID(a.MAC), "key_id", c.keyID(), "we_verify_theirs", ours, "they_verify_ours", a.KnowsYours)
			}
		case <-timer.C:
			c.mismatched.Store(int64(bad))
			c.gauge.Set(float64(bad))
			if bad == 0 && loud {
				c.log.Info("token key check", "peers", len(peers), "key_id", c.keyID())
			}
			return bad
		}
	}
}

// keyID is the id of the key that made sig (Keyring.Sign names it first).
func keyID(sig string) string {
	id, _, _ := strings.Cut(sig, ".")
	return id
}

func (c *Checker) keyID() string { return keyID(c.o.Keys.Sign(domain)) }
