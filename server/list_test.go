package server_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	"github.com/jetgate/jetgate/internal/auth"
	"github.com/jetgate/jetgate/internal/authtest"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
	"github.com/jetgate/jetgate/server"
)

// listEnv is a NATS server with ORDERS (consumers billing and audit, billing
// with a dead letter) and DLQ, and guarded replicas sharing one keyring.
// alice and bob may fetch, settle and read billing; carol may read audit
// only; dave may fetch and settle billing but not read it.
type listEnv struct {
	*dlEnv
	authn *auth.Authenticator
}

var (
	carol = principal{"carol", "carol-key"}
	dave  = principal{"dave", "dave-key"}
)

func newListEnv(t *testing.T) *listEnv {
	t.Helper()
	var keys []auth.APIKey
	for _, p := range []principal{alice, bob, carol, dave} {
		keys = append(keys, auth.APIKey{Principal: p.name, SHA256: authtest.KeyHash(p.key)})
	}
	all := []auth.Action{auth.ActionFetch, auth.ActionSettle, auth.ActionRead}
	a, err := auth.New(auth.Config{APIKeys: keys, Grants: []auth.Grant{
		{Principal: alice.name, Stream: stream, Consumers: []string{consumer}, Actions: all},
		{Principal: bob.name, Stream: stream, Consumers: []string{consumer}, Actions: all},
		{Principal: carol.name, Stream: stream, Consumers: []string{other}, Actions: []auth.Action{auth.ActionRead}},
		{Principal: dave.name, Stream: "*", Consumers: []string{"*"}, Actions: []auth.Action{auth.ActionFetch, auth.ActionSettle}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return &listEnv{dlEnv: newDLEnv(t), authn: a}
}

// replica starts one more guarded replica, on a NATS connection of its own
// that the test may close (a replica that crashed).
func (e *listEnv) replica() *gwtest.Replica {
	e.t.Helper()
	g := server.NewGuard(e.authn, quietLog(), nil)
	return gwtest.Start(e.t, replica.Options{
		Conn: natstest.Connect(e.t, e.ns),
		Consumers: []coreconsumer.Config{
			{Stream: stream, Name: consumer, MaxDeliver: 3, DeadLetter: &coreconsumer.DeadLetter{Subject: dlqSubject, OnTerm: true}},
			{Stream: stream, Name: other},
		},
		Keys: e.keys,
	}, grpc.ChainUnaryInterceptor(g.Unary()), grpc.ChainStreamInterceptor(g.Stream()))
}

func (p principal) in(ctx context.Context) context.Context {
	return as(ctx, "authorization", "Bearer "+p.key)
}

func ctxFor(t *testing.T, p principal) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return p.in(ctx)
}

func expectCode(t *testing.T, what string, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Errorf("%s: %v (%v), want %v", what, got, err, want)
	}
}

// Every listing needs the read grant: dave, who may fetch and settle every
// consumer, gets PERMISSION_DENIED from each; carol, who may read audit
// alone, sees audit alone, and not billing's leases or dead letters.
func TestListingsNeedRead(t *testing.T) {
	e := newListEnv(t)
	r := e.replica()
	calls := map[string]func(context.Context) error{
		"ListStreams": func(ctx context.Context) error {
			_, err := r.Streams.ListStreams(ctx, &jetgatev1.ListStreamsRequest{})
			return err
		},
		"ListConsumers": func(ctx context.Context) error {
			_, err := r.Consumers.ListConsumers(ctx, &jetgatev1.ListConsumersRequest{Stream: stream})
			return err
		},
		"ListLeases": func(ctx context.Context) error {
			_, err := r.Consumers.ListLeases(ctx, &jetgatev1.ListLeasesRequest{Stream: stream, Consumer: consumer})
			return err
		},
		"ListDeadLetters": func(ctx context.Context) error {
			_, err := r.Consumers.ListDeadLetters(ctx, &jetgatev1.ListDeadLettersRequest{Stream: stream, Consumer: consumer})
			return err
		},
	}
	for name, call := range calls {
		expectCode(t, name+" by dave (no read)", call(ctxFor(t, dave)), codes.PermissionDenied)
		expectCode(t, name+" by alice (read)", call(ctxFor(t, alice)), codes.OK)
		expectCode(t, name+" with no credentials", call(context.Background()), codes.Unauthenticated)
	}
	expectCode(t, "ListLeases of billing by carol", calls["ListLeases"](ctxFor(t, carol)), codes.PermissionDenied)
	expectCode(t, "ListDeadLetters of billing by carol", calls["ListDeadLetters"](ctxFor(t, carol)), codes.PermissionDenied)

	names := func(p principal) []string {
		resp, err := r.Consumers.ListConsumers(ctxFor(t, p), &jetgatev1.ListConsumersRequest{Stream: stream})
		if err != nil {
			t.Fatalf("%s's ListConsumers: %v", p.name, err)
		}
		var out []string
		for _, c := range resp.GetConsumers() {
			out = append(out, c.GetName())
		}
		return out
	}
	if got := names(carol); !slices.Equal(got, []string{other}) {
		t.Errorf("carol sees consumers %v, want [%s]", got, other)
	}
	if got := names(alice); !slices.Equal(got, []string{consumer}) {
		t.Errorf("alice sees consumers %v, want [%s]", got, consumer)
	}
	ss, err := r.Streams.ListStreams(ctxFor(t, carol), &jetgatev1.ListStreamsRequest{})
	if err != nil || len(ss.GetStreams()) != 1 || ss.GetStreams()[0].GetName() != stream || ss.GetStreams()[0].GetConsumers() != 1 {
		t.Errorf("carol's ListStreams: %v %v; want %s with 1 consumer she may read", ss, err, stream)
	}
	_, err = r.Consumers.ListConsumers(ctxFor(t, alice), &jetgatev1.ListConsumersRequest{Stream: "OTHER"})
	expectCode(t, "ListConsumers of a stream alice may not read", err, codes.PermissionDenied)
}

// ListConsumers reports the backlog the server reports, from one listing,
// and ListStreams the stream's size.
func TestListConsumersShowsTheBacklog(t *testing.T) {
	e := newListEnv(t)
	r := e.replica()
	for range 5 {
		e.publish("orders.new", "x", nil)
	}
	if ms := fetchAs(t, &harness{t: t}, r.Consumers, alice, 2, time.Second); len(ms) != 2 {
		t.Fatalf("alice fetched %d, want 2", len(ms))
	}
	resp, err := r.Consumers.ListConsumers(ctxFor(t, alice), &jetgatev1.ListConsumersRequest{Stream: stream})
	if err != nil || len(resp.GetConsumers()) != 1 {
		t.Fatalf("ListConsumers: %v %v", resp, err)
	}
	c := resp.GetConsumers()[0]
	if c.GetNumPending() != 3 || c.GetNumAckPending() != 2 || c.GetGatewayLeases() != 2 || !c.GetDeadLetterConfigured() ||
		c.GetOldestUnackedAge().AsDuration() <= 0 || c.GetPaused() {
		t.Errorf("billing: %v; want 3 pending, 2 ack pending and leased here, a dead letter configured, an oldest unacked age", c)
	}
	ss, err := r.Streams.ListStreams(ctxFor(t, alice), &jetgatev1.ListStreamsRequest{})
	if err != nil || len(ss.GetStreams()) != 1 || ss.GetStreams()[0].GetMessages() != 5 || ss.GetStreams()[0].GetLastSeq() != 5 {
		t.Errorf("ListStreams: %v %v; want ORDERS with 5 messages", ss, err)
	}
}

// Leases held on two replicas are listed by principal from either, each
// with the replica that holds them; a replica that crashed (its NATS
// connection gone, its roster key not yet aged out) is named as missing,
// and its leases are not counted.
func TestListLeasesAcrossReplicas(t *testing.T) {
	e := newListEnv(t)
	nc2 := natstest.Connect(t, e.ns)
	r1 := e.replica()
	g := server.NewGuard(e.authn, quietLog(), nil)
	r2 := gwtest.Start(t, replica.Options{
		Conn:      nc2,
		Consumers: []coreconsumer.Config{{Stream: stream, Name: consumer, MaxDeliver: 3, DeadLetter: &coreconsumer.DeadLetter{Subject: dlqSubject, OnTerm: true}}},
		Keys:      e.keys,
	}, grpc.ChainUnaryInterceptor(g.Unary()))
	for range 3 {
		e.publish("orders.new", "x", nil)
	}
	h := &harness{t: t}
	if ms := fetchAs(t, h, r1.Consumers, alice, 2, time.Second); len(ms) != 2 {
		t.Fatalf("alice fetched %d at replica 1, want 2", len(ms))
	}
	if ms := fetchAs(t, h, r2.Consumers, bob, 1, time.Second); len(ms) != 1 {
		t.Fatalf("bob fetched %d at replica 2, want 1", len(ms))
	}
	// The roster is each replica's view of the others, learnt from a KV
	// watch: wait until both have heard of each other.
	for _, r := range []*gwtest.Replica{r1, r2} {
		natstest.Eventually(t, 10*time.Second, "the replicas on each other's roster", func() bool {
			resp, err := r.Consumers.ListLeases(ctxFor(t, alice), &jetgatev1.ListLeasesRequest{Stream: stream, Consumer: consumer})
			return err == nil && len(resp.GetReplicas()) == 2
		})
	}
	for i, r := range []*gwtest.Replica{r1, r2} {
		resp, err := r.Consumers.ListLeases(ctxFor(t, alice), &jetgatev1.ListLeasesRequest{Stream: stream, Consumer: consumer})
		if err != nil {
			t.Fatalf("ListLeases at replica %d: %v", i+1, err)
		}
		want := []string{"alice 2 " + r1.ID().String(), "bob 1 " + r2.ID().String()}
		if got := holders(resp); !slices.Equal(got, want) || len(resp.GetMissingReplicas()) != 0 || len(resp.GetReplicas()) != 2 {
			t.Errorf("ListLeases at replica %d: holders %v, replicas %v, missing %v; want %v, both, none",
				i+1, got, resp.GetReplicas(), resp.GetMissingReplicas(), want)
		}
		for _, x := range resp.GetHolders() {
			if x.GetOldestAge().AsDuration() < 0 || time.Since(x.GetOldestSince().AsTime()) > time.Minute {
				t.Errorf("holder %s: oldest %v, age %v", x.GetPrincipal(), x.GetOldestSince().AsTime(), x.GetOldestAge().AsDuration())
			}
		}
	}

	nc2.Close() // replica 2 crashes: no word to the roster, no answers
	start := time.Now()
	resp, err := r1.Consumers.ListLeases(ctxFor(t, alice), &jetgatev1.ListLeasesRequest{Stream: stream, Consumer: consumer})
	if err != nil {
		t.Fatalf("ListLeases with replica 2 gone: %v", err)
	}
	if got := holders(resp); !slices.Equal(got, []string{"alice 2 " + r1.ID().String()}) ||
		!slices.Equal(resp.GetMissingReplicas(), []string{r2.ID().String()}) {
		t.Errorf("with replica 2 gone: holders %v, missing %v; want alice's alone, replica 2 (%s) missing",
			got, resp.GetMissingReplicas(), r2.ID())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("ListLeases took %v to give up on the missing replica", d)
	}
}

func holders(resp *jetgatev1.ListLeasesResponse) []string {
	var out []string
	for _, x := range resp.GetHolders() {
		out = append(out, x.GetPrincipal()+" "+itoa(x.GetLeases())+" "+strings.Join(x.GetReplicas(), ","))
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// A replica answers a question about leases only when it is signed with
// the deployment's key: the same question unsigned, or signed with another
// key, gets no answer.
func TestListLeasesAnswersOnlySignedQuestions(t *testing.T) {
	e := newListEnv(t)
	r := e.replica()
	ask := func(keys *token.Keyring) (*nats.Msg, error) {
		sub, err := e.nc.SubscribeSync(e.nc.NewInbox())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = sub.Unsubscribe() }()
		body := []byte(`{"stream":"ORDERS","consumer":"billing","from":"test","sent_ms":` + itoa(time.Now().UnixMilli()) + `,"nonce":"n"}`)
		m := &nats.Msg{Subject: "_JETGATE.LEASES", Reply: sub.Subject, Data: body, Header: nats.Header{}}
		if keys != nil {
			m.Header.Set("Jetgate-Sig", keys.Sign([]byte(m.Subject), body))
		}
		if err := e.nc.PublishMsg(m); err != nil {
			t.Fatal(err)
		}
		return sub.NextMsg(time.Second)
	}
	if m, err := ask(e.keys); err != nil || !strings.Contains(string(m.Data), r.ID().String()) {
		t.Fatalf("a signed question: %v %v; want the replica's answer", m, err)
	}
	for name, keys := range map[string]*token.Keyring{"unsigned": nil, "signed with another key": token.RandomKeyring()} {
		if m, err := ask(keys); err == nil {
			t.Errorf("a question %s was answered: %s", name, m.Data)
		}
	}
}

// ListDeadLetters pages through a consumer's dead letters, oldest first,
// each with its headers and the first 1024 bytes of its data; a page token
// it did not give, a page too large, and a consumer with no dead letter are
// refused.
func TestListDeadLettersPaged(t *testing.T) {
	e := newListEnv(t)
	r := e.gateway() // no guard: the grants are TestListingsNeedRead's
	big := strings.Repeat("b", 3000)
	for i := range 5 {
		data := "order " + itoa(int64(i))
		if i == 4 {
			data = big
		}
		e.publish("orders.new", data, nats.Header{"Kind": []string{"a", "b"}})
	}
	ms := fetchVia(t, r.Consumers, 5, time.Second)
	var toks []string
	for _, m := range ms {
		toks = append(toks, m.GetToken())
	}
	if tr, err := r.Consumers.Term(context.Background(), &jetgatev1.TermRequest{Stream: stream, Consumer: consumer, Tokens: toks, Reason: "bad"}); err != nil || len(tr.GetFailures()) != 0 || len(toks) != 5 {
		t.Fatalf("term %d: %v %v", len(toks), tr, err)
	}
	e.waitDeadLetters(5)

	var got []*jetgatev1.DeadLetter
	var sizes []int
	for tok := ""; ; {
		resp, err := r.Consumers.ListDeadLetters(context.Background(), &jetgatev1.ListDeadLettersRequest{Stream: stream, Consumer: consumer, PageSize: 2, PageToken: tok})
		if err != nil {
			t.Fatalf("ListDeadLetters page %d: %v", len(sizes)+1, err)
		}
		if resp.GetTotal() != 5 {
			t.Errorf("total %d, want 5", resp.GetTotal())
		}
		got = append(got, resp.GetDeadLetters()...)
		sizes = append(sizes, len(resp.GetDeadLetters()))
		if tok = resp.GetNextPageToken(); tok == "" {
			break
		}
	}
	if !slices.Equal(sizes, []int{2, 2, 1}) || len(got) != 5 {
		t.Fatalf("pages of %v dead letters, want 2, 2, 1", sizes)
	}
	bySeq := map[uint64]*jetgatev1.DeadLetter{} // copied in the order the advisories came
	for i, dl := range got {
		if i > 0 && dl.GetSeq() <= got[i-1].GetSeq() {
			t.Errorf("dead letter %d: seq %d after %d, want oldest first", i, dl.GetSeq(), got[i-1].GetSeq())
		}
		bySeq[dl.GetStreamSeq()] = dl
		if dl.GetSubject() != "orders.new" || dl.GetReason() != "TERM" || dl.GetDeliveries() != 1 ||
			!slices.Equal(dl.GetHeaders()["Kind"].GetValues(), []string{"a", "b"}) || dl.GetHeaders()["Jetgate-Dead-Term-Reason"].GetValues()[0] != "bad" {
			t.Errorf("dead letter %d: %v", i, dl)
		}
	}
	if len(bySeq) != 5 {
		t.Fatalf("dead letters of %d messages, want 5", len(bySeq))
	}
	if dl := bySeq[1]; string(dl.GetDataPreview()) != "order 0" || dl.GetDataSize() != 7 {
		t.Errorf("preview of message 1: %q (%d bytes), want the whole data", dl.GetDataPreview(), dl.GetDataSize())
	}
	if dl := bySeq[5]; string(dl.GetDataPreview()) != big[:1024] || dl.GetDataSize() != 3000 {
		t.Errorf("preview of message 5: %d bytes of %d; want 1024 of 3000", len(dl.GetDataPreview()), dl.GetDataSize())
	}

	for name, req := range map[string]*jetgatev1.ListDeadLettersRequest{
		"a page token it did not give": {Stream: stream, Consumer: consumer, PageToken: "x"},
		"page_size 101":                {Stream: stream, Consumer: consumer, PageSize: 101},
		"a bad consumer name":          {Stream: stream, Consumer: "a.b"},
	} {
		_, err := r.Consumers.ListDeadLetters(context.Background(), req)
		expectCode(t, name, err, codes.InvalidArgument)
	}
	_, err := r.Consumers.ListDeadLetters(context.Background(), &jetgatev1.ListDeadLettersRequest{Stream: stream, Consumer: other})
	expectCode(t, "a consumer with no dead letter", err, codes.FailedPrecondition)
	_, err = r.Consumers.ListConsumers(context.Background(), &jetgatev1.ListConsumersRequest{Stream: "no such"})
	expectCode(t, "ListConsumers of a bad stream name", err, codes.InvalidArgument)
	_, err = r.Consumers.ListConsumers(context.Background(), &jetgatev1.ListConsumersRequest{Stream: "OTHER"})
	expectCode(t, "ListConsumers of a stream it does not serve", err, codes.NotFound)
}
