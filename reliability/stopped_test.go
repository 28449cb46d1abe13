package reliability

import (
	"context"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/protobuf/types/known/durationpb"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/token"
)

// wordWait is how long a replica that noticed a reset holds the consumer's
// new deliveries back for peers that do not answer its word (resetWordWait
// in internal/consumer/word.go); resumeSlack is what a loaded 2-core
// machine under -race adds to it before a held delivery reaches a caller.
const (
	wordWait    = 2 * time.Second
	resumeSlack = 1500 * time.Millisecond
)

// staleOnWake adds the settles that reach the stopped replica before it has
// read the reset: the replica is stopped mid-traffic, callers' requests in
// flight to it included, and the kept tokens are settled while it is
// stopped, directly (by a caller that waits for the answer, and by one that
// gives up after 2s: both requests wait in its socket) and through a peer
// (the forward waits in its socket), and directly at once after SIGCONT.
// The woken replica used to serve them before it read the reset from NATS,
// landing them on the reset's redeliveries; it now catches up with NATS
// first (internal/replica/wake.go). JETGATE_FAULTS_DRAIN_BEFORE_STOP=1
// drains the replica before stopping it instead, so that nothing reaches it
// before it noticed the reset.
var staleOnWake = os.Getenv("JETGATE_FAULTS_DRAIN_BEFORE_STOP") == ""

// TestFaultReplicaStoppedThroughAReset stops one of three jetgate processes
// with SIGSTOP (3s short, 30s long, twice in the long form) while callers
// fetch and settle through the other two, and resets the consumer while it
// is stopped: early, while the roster still counts it, and in the long form
// again once its liveness key has aged out. Just before the stop the test
// fetches a batch through it and keeps the tokens: ack_wait outlives the
// stop, so only the reset voids them. Once the replica is continued
// (SIGCONT) and has noticed the reset, the test settles each kept token
// (Ack, Nak or Term) through it and through a peer; see staleOnWake for the
// settles that reach it sooner. Callers leave the reset's redeliveries of
// those messages unanswered until the settles are done, so that a stale
// settle landing on them would show: a Nak as a redelivery before the
// lease's deadline, an Ack or a Term as a message never redelivered (lost).
//
// Asserts: the peers hand out new deliveries within wordWait+resumeSlack of
// the reset; no settle of a pre-reset token succeeds; no held redelivery
// comes back early; no settle confirmed for a delivery after a later one
// was handed out; lost 0, ambiguous 0, and the server drained.
func TestFaultReplicaStoppedThroughAReset(t *testing.T) {
	stop := time.Duration(scale(3, 30)) * time.Second
	ackWait := stop + time.Duration(scale(5, 10))*time.Second
	n, cycles, probeN := scale(1000, 10000), scale(1, 2), scale(45, 90)

	bin, ns, nc, keyFile := processFixture(t)
	keys, err := token.LoadKeyring(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--nats-url", ns.ClientURL(), "--token-key-file", keyFile, "--ack-wait", ackWait.String()}
	set := &stoppable{}
	for range 3 {
		p := startProcess(t, bin, args...)
		// Runs before startProcess's kill: a stopped process is continued.
		t.Cleanup(func() { _ = syscall.Kill(p.cmd.Process.Pid, syscall.SIGCONT) })
		set.add(t, p)
	}
	kv := members(t, nc)
	natstest.Eventually(t, 30*time.Second, "3 replicas on the roster", func() bool { return liveCount(kv) == 3 })

	watch := newStoppedWatch()
	d := &Driver{Stream: stream, Consumer: consumer, Checker: NewChecker(), Batch: 50,
		Expires: 500 * time.Millisecond, RPCTimeout: 2 * time.Second, Quiesce: ackWait + 2*time.Second,
		// Publishing spans the stops.
		PublishGap: time.Duration(scale(3, 8)) * time.Millisecond,
		Route:      set.route, Watch: watch,
		// No caller ignores a message of its own accord: that would cost ackWait.
		AnswerMsg: watch.answer(answers(1)),
		Hold:      func(r *rand.Rand) time.Duration { return time.Duration(r.IntN(300)) * time.Millisecond },
	}

	var probes probeTally
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("settles of pre-reset tokens, per token: %s", formatCounts(probes.counts()))
			_, early := watch.probeVerdict()
			t.Logf("held messages: %s\nearly: %v", watch.probeStates(d.Checker), early)
		}
	})
	within := time.Duration(scale(90, 600)) * time.Second
	r := run(t, d, n, 4, within, func(ctx context.Context) {
		for c := range cycles {
			waitPublished(ctx, d.Checker, (c+1)*n/(cycles+2))
			if ctx.Err() != nil {
				return
			}
			cy := &stopCycle{t: t, set: set, victim: c % 3, kv: kv, keys: keys, nc: nc, watch: watch,
				chk: d.Checker, stop: stop, probes: &probes}
			cy.run(ctx, probeN)
		}
	})

	resumes := watch.resumed()
	held, early := watch.probeVerdict()
	t.Logf("resets while a replica was stopped, and the first new delivery a caller got after each: %s", formatResumes(resumes))
	t.Logf("settles of pre-reset tokens, per token: %s", formatCounts(probes.counts()))
	t.Logf("the reset's redeliveries of those messages held unanswered across the wake: %d; came back early: %d", held, len(early))
	if wrong := watch.verdict(); len(wrong) > 0 {
		t.Fatalf("%d settles landed on a delivery they were not issued for, e.g. %s", len(wrong), wrong[0])
	}
	if ok := probes.applied(); ok > 0 {
		t.Fatalf("%d settles of a pre-reset token succeeded (stale applied): %s", ok, formatCounts(probes.counts()))
	}
	if len(early) > 0 {
		t.Fatalf("%d held redeliveries came back before their lease's deadline (a stale Nak landed on them), first: %s", len(early), early[0])
	}
	if r.Ambiguous != 0 {
		t.Fatalf("ambiguous %d", r.Ambiguous)
	}
	if len(resumes) != cycles*scale(1, 2) || held == 0 || probes.total() == 0 {
		t.Fatalf("the run did not exercise what it is for: %d resets measured, %d held, %d probes", len(resumes), held, probes.total())
	}
	for _, rs := range resumes {
		if rs.after < 0 || rs.after > wordWait+resumeSlack {
			t.Fatalf("after a reset the other replicas handed out no new delivery for %v (bound %v): %s",
				rs.after, wordWait+resumeSlack, formatResumes(resumes))
		}
	}
	drainServer(t, d, nc, r.Published, ackWait+10*time.Second)
}

// drainServer fetches and acks through the live replicas until the server
// has nothing pending or awaiting an ack and its ack floor is at the last
// message. A reset redelivers what was acked above the floor, and what it
// sent to a stopped replica's pull comes back only after ack_wait: those
// come after the checker counted every message settled.
func drainServer(t *testing.T, d *Driver, nc *nats.Conn, published int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	again := 0
	for {
		ci := consumerInfo(t, nc)
		if ci.NumAckPending == 0 && ci.NumPending == 0 && ci.AckFloor.Stream == uint64(published) {
			t.Logf("drained: %d deliveries of messages already settled acked again", again)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer not drained: ack pending %d, pending %d, ack floor %d of %d",
				ci.NumAckPending, ci.NumPending, ci.AckFloor.Stream, published)
		}
		cons := d.consumers()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := cons[again%len(cons)].Fetch(ctx, &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer,
			Batch: 100, Expires: durationpb.New(time.Second)})
		var tokens []string
		for _, m := range resp.GetMessages() {
			d.Checker.Delivered(string(m.GetData()), time.Now())
			tokens = append(tokens, m.GetToken())
		}
		if err == nil && len(tokens) > 0 {
			if _, err := call(ctx, cons[again%len(cons)], stream, consumer, Ack, tokens); err != nil {
				t.Logf("ack while draining: %v", err)
			}
		}
		cancel()
		again += len(tokens)
	}
}
