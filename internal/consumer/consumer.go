// Package consumer is jetgate's hold on one durable pull consumer: it
// leases the consumer's messages and settles the leases it holds. It
// combines the lease table, the token keyring, the pull protocol and the
// settle sender; each of those owns its own rules. What jetgate knows of
// the consumer on the server, its resets included, has one owner here
// (onServer, server.go), and the reset rules one file (reset.go).
//
// Lock order, where two locks meet: a Consumer's orphan pool, then a pull's
// lock (taking its messages), then the reset watch's (reset.go), then the
// lease table's or the waiting line's (a pull gives its place back as it
// ends, under its own lock). The owner's view is written under its own
// lock, which a change of policy holds while it takes the lease table's
// and the waiting line's.
package consumer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/pull"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// sweepEvery is how often expired leases are swept and orphans sent back,
// while the consumer holds any.
const sweepEvery = 100 * time.Millisecond

// growEvery is how often a replica below its share of waiting pulls asks
// the server for room, while callers wait in line for a place.
const growEvery = time.Second

// viewEvery is how often the consumer's info is asked while pulls are open
// and leases held and nothing else asks it: a consumer scaled to more
// replicas stops settling a batch on one reply (serverView.inOrder) within
// it.
const viewEvery = 10 * time.Second

// Deps are what a Consumer shares with the rest of its replica.
type Deps struct {
	Conn   *nats.Conn
	Sender *settle.Sender
	// Ledger is the settle record shared by replicas. Nil only where one
	// replica serves alone (tests of this package): a replica that acts on
	// tokens whose issuer is gone must have it.
	Ledger  *settle.Ledger
	Keys    *token.Keyring
	Self    token.IssuerID // this replica, the issuer of its tokens
	Timeout time.Duration  // bounds each NATS request
	// MaxFetchBytes bounds the bytes one Fetch pulls (and so returns), so
	// that a response fits what a default gRPC client accepts (4 MiB).
	MaxFetchBytes int64
	// MaxLease is how long a Consume's auto_extend keeps one lease alive;
	// 0 is DefaultMaxLease.
	MaxLease time.Duration
	Log      *slog.Logger
	// OnReset, if set, tells the other replicas of reset id in place of the
	// consumer's own word (word.go), as many as Peers names (peers), and
	// returns once they have voided their leases or it gave up waiting. It
	// runs on a goroutine of its own, while the consumer's new deliveries
	// are held back. Unset, the consumer says the word itself on Conn, and
	// its peers hear it through HearResetWord.
	OnReset func(id string, peers int)
	// Peers names the other replicas serving a consumer, by the ids their
	// answers to a reset's word carry (their Self), as the roster holds them
	// in NATS now: its watch may not show a peer that bound a moment ago
	// yet. Nil: the consumer has no peers to wait for.
	Peers func(ctx context.Context, stream, consumer string) ([]string, error)
	// Awake, if set, is called just before a settle is sent: it returns once
	// the replica has taken in what NATS sent it while it may have slept
	// since the settle began (a process stopped mid-settle), so that a reset
	// slept through voids the settle's leases first, and it is not sent.
	Awake func(ctx context.Context) error
	// CatchUp, if set, is called before each pull is sent: it returns once
	// the replica has taken in what NATS had sent it (a reset request held
	// by the client), lest the pull's deliveries seem from before it.
	CatchUp func(ctx context.Context) error
	// Terminated, if set, is told of the deliveries whose Term the server
	// has just confirmed (their StreamSeq and Delivered), and the Term's
	// reason, before the Term is reported: the replica records them for
	// the dead letters of consumers with on_term. Only a consumer bound
	// with a Config whose DeadLetter has OnTerm tells it (withTermRecords),
	// and sends again the Terms whose answer never came (unsure.go).
	Terminated func(ctx context.Context, stream, name, reason string, ds []lease.Ref)
	// Traced keeps each delivery's creation context, for spans.
	Traced bool
	// API is the prefix of JetStream's API subjects (pull.API); "" is
	// $JS.API., no domain.
	API string
}

// Consumer leases and settles one durable consumer's messages. It composes
// a type for each thing it does, and its methods are theirs, by file:
//   - onServer, what the server says of the consumer and every reset: its
//     view and what is asked of the server (server.go: Info, Pause,
//     Resume, Unpin, SetPaused, OldestUnackedAge), the reset rules
//     (reset.go: ResetRequested, ResetTold), following a change of policy
//     (policy.go: FollowUpdate) and the word of a reset to the peers
//     (word.go: HearResetWord);
//   - puller, the one pull loop (loop.go) that Fetch (fetch.go) and Consume
//     (consume.go, with consumeStream) drive, and its share of max_waiting
//     (waiting.go: SetReplicas, Pulls, Replicas);
//   - settler, settles and adoption (settle.go: Settle, Adopt, Superseded,
//     Origins), an Extend's new deadline and the leases kept alive
//     (extend.go);
//   - the Consumer itself (this file): its life (Bind, Run, Close) and what
//     it holds.
//
// Concepts with state of their own that they share are small types too: the
// lease table (with each Consume stream's lease.Owner), orphanPool, issuer
// and Counts; waitingPulls is the puller's, resetWatch and holdBack the
// owner's.
type Consumer struct {
	Stream, Name string

	*onServer // the consumer on the server: what it last said, asking it, its resets
	*puller   // its pulls: Fetch, Consume and the places among the waiting pulls
	*settler  // settling its leases

	leases  *lease.Table
	tokens  issuer
	orphans *orphanPool
	counts  Counts
	log     *slog.Logger

	woken     chan struct{} // Run: the consumer has something to attend to
	attending atomic.Bool   // Run is attending: a wake has nothing to say
}

// Bind creates or updates the durable consumer cfg describes and returns the
// Consumer that serves it. Run must then run until the Consumer is closed.
func Bind(ctx context.Context, js jetstream.JetStream, cfg Config, d Deps) (*Consumer, error) {
	s, cons, err := bootstrap(ctx, js, cfg, d.Log)
	if err != nil {
		return nil, err
	}
	return newConsumer(s, cons, d.withTermRecords(cfg)), nil
}

// BindIn is Bind in a stream already looked up.
func BindIn(ctx context.Context, s jetstream.Stream, cfg Config, d Deps) (*Consumer, error) {
	cons, err := bindConsumer(ctx, s, cfg, d.Log)
	if err != nil {
		return nil, err
	}
	return newConsumer(s, cons, d.withTermRecords(cfg)), nil
}

// Attach serves the durable consumer name of stream s as it is on the
// server: jetgate creates and changes nothing of it (consumers on demand).
func Attach(ctx context.Context, s jetstream.Stream, name string, d Deps) (*Consumer, error) {
	stream := s.CachedInfo().Config.Name
	cons, err := s.Consumer(ctx, name)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		return nil, fmt.Errorf("%w: stream %q has no consumer %q", errs.ErrConsumerNotFound, stream, name)
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return nil, fmt.Errorf("%w: stream %q does not exist", errs.ErrConsumerNotFound, stream)
	case errors.Is(err, jetstream.ErrNotPullConsumer):
		return nil, unservable(stream, name, refusalOf(jetstream.ConsumerConfig{DeliverSubject: "?"}))
	case err != nil:
		return nil, fmt.Errorf("%w: look up consumer %q of stream %q: %v", errs.ErrUnavailable, name, stream, err)
	}
	if r := refusalOf(cons.CachedInfo().Config); r != "" {
		return nil, unservable(stream, name, r)
	}
	return newConsumer(s, cons, d.withTermRecords(Config{})), nil // no dead letter: not configured
}

func newConsumer(s jetstream.Stream, cons jetstream.Consumer, d Deps) *Consumer {
	ci := cons.CachedInfo()
	c := &Consumer{
		Stream: ci.Stream,
		Name:   ci.Name,
		log:    d.Log.With("stream", ci.Stream, "consumer", ci.Name),
		leases: lease.NewTable(ci.Config.AckWait),
		woken:  make(chan struct{}, 1),
	}
	c.counts.Since = time.Now()
	c.tokens = issuer{self: d.Self, keys: d.Keys, stream: c.Stream, name: c.Name, leases: c.leases}
	c.onServer = newOnServer(s, cons, d, c.log, c.leases.Void, &c.counts)
	c.settler = &settler{
		stream: c.Stream, name: c.Name, sender: d.Sender, ledger: d.Ledger, log: c.log,
		server: c.onServer, leases: c.leases, tokens: &c.tokens, counts: &c.counts, wake: c.wake, awake: d.Awake,
		terminated: d.Terminated,
	}
	c.puller = &puller{
		nc:            d.Conn,
		next:          pull.NextSubject(cmp.Or(d.API, pull.API("")), ci.Stream, ci.Name),
		maxFetchBytes: cmp.Or(d.MaxFetchBytes, DefaultMaxFetchBytes),
		maxLease:      cmp.Or(d.MaxLease, DefaultMaxLease),
		traced:        d.Traced,
		catchUp:       d.CatchUp,
		log:           c.log,
		waiting:       newWaitingPulls(placesOf(ci.Config.MaxWaiting)),
		server:        c.onServer,
		settles:       c.settler,
		leases:        c.leases,
		tokens:        &c.tokens,
		counts:        &c.counts,
		wake:          c.wake,
		open:          new(openPulls),
	}
	c.onServer.resets.withdraw = c.puller.open.withdrawBefore
	c.orphans = newOrphanPool(c.puller.receive, func(d *Delivery, now time.Time) bool {
		return c.leases.Holds(ref(c.ClaimsOf(d)), now)
	})
	c.puller.orphans = c.orphans
	c.waiting.woke = c.wake
	c.onServer.changed, c.onServer.replicas = c.policyChanged, c.puller.Replicas
	c.onServer.retime = func(p lease.Policy) { c.leases.SetTiming(p) }
	c.onServer.unpinned = func(group string, sent time.Time) { c.orphans.unpinned(group, sent); c.wake() }
	c.leases.SetTiming(c.onServer.timing())
	return c
}

// Run attends to the consumer until ctx ends: while it holds leases,
// orphans or pulls, it sweeps the lease table, sends orphans back, grows
// the replica's share of waiting pulls for callers in line, and, while
// pulls are open, refreshes what the server says of the consumer every
// viewEvery; idle, it waits and costs nothing.
func (c *Consumer) Run(ctx context.Context) {
	defer c.settler.unsure.wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.woken:
			c.attend(ctx)
		}
	}
}

// attend runs the consumer's timers while it is busy. Meanwhile wake sends
// nothing, so that a Fetch does not wake Run for nothing; it says so before
// it looks for the last time, so that what a wake would have said is seen.
func (c *Consumer) attend(ctx context.Context) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	grow := time.NewTicker(growEvery)
	defer grow.Stop()
	c.attending.Store(true)
	defer c.attending.Store(false)
	for {
		if !c.busy() {
			c.attending.Store(false)
			if !c.busy() {
				return
			}
			c.attending.Store(true)
		}
		select {
		case <-ctx.Done():
			return
		case <-grow.C:
			c.puller.growWaiting(ctx)
		case now := <-t.C:
			c.leases.Sweep(now)
			c.settler.keepAlive(ctx, now)
			c.settler.retryUnsure(ctx)
			c.settler.nak(ctx, c.orphans.due(now))
			if open, _, _ := c.waiting.counts(); open > 0 && c.leases.Live() > 0 && now.Sub(c.onServer.view().at) >= viewEvery {
				_, _ = c.onServer.ask(ctx, time.Second)
			}
		case <-c.woken:
		}
	}
}

// busy reports whether the consumer holds anything its timers attend to:
// leases (settled ones too, until their retention ends), orphans, pulls
// (but those of idle Consume streams: an idle pusher's costs no wake-ups),
// callers in line for one, or Terms to send again.
func (c *Consumer) busy() bool {
	open, _, queued := c.waiting.counts()
	return open > int(c.puller.idle.Load()) || queued > 0 || c.settler.unsure.any() ||
		c.leases.Held() > 0 || c.orphans.len() > 0 || c.orphans.pulls(time.Now()) > 0
}

// wake has Run attend to the consumer: called after whatever makes it busy.
func (c *Consumer) wake() {
	if c.attending.Load() {
		return
	}
	select {
	case c.woken <- struct{}{}:
	default:
	}
}

// Close naks back the orphans whose pull has ended, so that they are
// redelivered at once rather than after ack_wait, sends once more the Terms
// whose answer never came, and waits for the words of resets to end. Run
// must have returned. It first waits, a little, for the abandoned pulls
// (orphanPool.settle).
func (c *Consumer) Close(ctx context.Context) {
	c.orphans.settle(ctx, c.puller.nc.FlushWithContext, time.Now().Add(consumeMaxWait+pull.LostGrace))
	c.settler.nak(ctx, c.orphans.ended(time.Now()))
	c.settler.retryTermsLast(ctx)
	c.onServer.words.Close()
	c.onServer.words.Wait()
}

// Idle reports whether the consumer holds nothing a caller could still
// use: no lease, orphan, pull or caller in line. Settled leases count until
// their retention ends (Run's sweeps drop them): unbound, the consumer
// would forget them, and a retried settle would fail LEASE_EXPIRED.
func (c *Consumer) Idle() bool {
	open, _, queued := c.waiting.counts()
	return open == 0 && queued == 0 && c.leases.Held() == 0 && c.orphans.len() == 0 && c.orphans.pulls(time.Now()) == 0
}

// Holds reports whether d's lease is still this replica's, live: not past
// its deadline, settled or being settled, or voided by a reset; or being
// extended, whatever its deadline (lease.Table.Holds).
func (c *Consumer) Holds(d *Delivery) bool { return c.leases.Holds(ref(c.ClaimsOf(d)), time.Now()) }

// ClaimsOf are what d's token says: whose lease it is and of which delivery.
func (c *Consumer) ClaimsOf(d *Delivery) token.Claims { return c.tokens.claims(d) }

// Reconnected is told that the connection to NATS was lost and made again:
// the server may have restarted, and one that did redelivers what awaits
// an ack by times it kept to the second, so every lease held ends that much
// sooner (lease.RestorePrecision), once. The connection may be on another
// server now: the one that holds the consumer may no longer be it (timing).
// What passed unheard meanwhile is asked before the next settle or pull.
func (c *Consumer) Reconnected() {
	c.onServer.connected.Store(connectedTo(c.onServer.nc, c.onServer.api))
	c.onServer.reconnects.Add(1)
	if n := c.leases.Shorten(); n > 0 {
		c.log.Info("NATS reconnected, or JetStream was out of reach: the leases held end a second sooner, as a server that restarted redelivers by delivery times it kept to the second",
			"leases", n)
		currentSoon(c.onServer)
	}
}

// LeaderElected is told that the consumer has a new leader (a replicated
// consumer's leader stepped down, moved, or was lost): the new leader
// redelivers what awaits an ack by times it holds to the second, so every
// lease held ends that much sooner, once, as after a restart.
func (c *Consumer) LeaderElected() {
	c.leaders.Add(1) // before the cut: a delivery added meanwhile is cut after it (receive)
	if n := c.leases.Shorten(); n > 0 {
		c.log.Info("the consumer has a new leader: the leases held end a second sooner, as a new leader redelivers by delivery times it holds to the second",
			"leases", n)
	}
}

// Paused reports whether the consumer is paused, as the server last said.
func (c *Consumer) Paused() bool { return c.view().paused }

// Leases counts the leases this replica holds on the consumer, unsettled.
func (c *Consumer) Leases() int { return c.leases.Live() }

// Orphans counts the messages of canceled Fetches held for the next Fetch
// or a Nak.
func (c *Consumer) Orphans() int { return c.orphans.len() }

// Counts are the consumer's counts.
func (c *Consumer) Counts() *Counts { return &c.counts }

// Holders counts this replica's live leases on the consumer by principal.
func (c *Consumer) Holders() []lease.Holder { return c.leases.Holders(time.Now()) }

// AbandonedPulls counts the pulls that callers who went away left open on
// the server: the orphan pool's, until the server ends them.
func (c *Consumer) AbandonedPulls() int { return c.orphans.pulls(time.Now()) }

// policyChanged follows a change of the consumer's policy on the server,
// told by the owner under its lock (views are followed in the order they
// are stored): the leases re-dated where the server will now redeliver
// sooner, the waiting places resized, and the leases voided when the
// consumer can no longer be served.
func (c *Consumer) policyChanged(old, now *serverView) {
	c.counts.PolicyChanges.Add(1)
	moved := c.leases.SetTiming(now.timing)
	if now.limits.maxWaiting != old.limits.maxWaiting {
		c.waiting.resize(placesOf(now.limits.maxWaiting), c.Replicas())
	}
	c.log.Info("the consumer's policy changed on the server",
		"ack_wait", now.timing.AckWait, "backoff", now.timing.BackOff, "was_ack_wait", old.timing.AckWait,
		"max_ack_pending", now.limits.maxAckPending, "max_waiting", now.limits.maxWaiting, "leases_redated", moved)
	if now.refusal != "" && old.refusal == "" {
		c.leases.Void()
		c.log.Warn("the consumer can no longer be served: its leases are void", "reason", now.refusal)
	}
	c.wake()
}
