package server_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/nats-io/nats.go"

	jetgatev1 "github.com/jetgate/jetgate/api/jetgate/v1"
	coreconsumer "github.com/jetgate/jetgate/internal/consumer"
	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/gwtest"
	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/replica"
	"github.com/jetgate/jetgate/internal/token"
)

func ack(t *testing.T, h *harness, c jetgatev1.ConsumerServiceClient, tokens ...string) []*jetgatev1.TokenFailure {
	t.Helper()
	resp, err := c.Ack(h.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: tokens})
	if err != nil {
		t.Fatalf("ack: %v", err)
	}
	return resp.GetFailures()
}

func nak(t *testing.T, h *harness, c jetgatev1.ConsumerServiceClient, delay time.Duration, tokens ...string) []*jetgatev1.TokenFailure {
	t.Helper()
	req := &jetgatev1.NakRequest{Stream: stream, Consumer: consumer, Tokens: tokens}
	if delay > 0 {
		req.Delay = durationpb.New(delay)
	}
	resp, err := c.Nak(h.ctx(), req)
	if err != nil {
		t.Fatalf("nak: %v", err)
	}
	return resp.GetFailures()
}

func wantNoFailures(t *testing.T, fs []*jetgatev1.TokenFailure) {
	t.Helper()
	for _, f := range fs {
		t.Errorf("token %d failed: %s %s", f.GetIndex(), f.GetReason(), f.GetMessage())
	}
}

func wantFailure(t *testing.T, fs []*jetgatev1.TokenFailure, index int32, reason string) {
	t.Helper()
	for _, f := range fs {
		if f.GetIndex() == index {
			if f.GetReason() != reason {
				t.Errorf("token %d: reason %s (%s), want %s", index, f.GetReason(), f.GetMessage(), reason)
			}
			return
		}
	}
	t.Errorf("token %d: no failure, want %s", index, reason)
}

func wantCode(t *testing.T, err error, code codes.Code, reason string) {
	t.Helper()
	st, _ := status.FromError(err)
	if st.Code() != code {
		t.Fatalf("error %v: code %v, want %v", err, st.Code(), code)
	}
	if reason == "" {
		return
	}
	for _, d := range st.Details() {
		if ei, ok := d.(*errdetails.ErrorInfo); ok && ei.GetReason() == reason {
			return
		}
	}
	t.Fatalf("error %v: no ErrorInfo with reason %s", err, reason)
}

func TestFetchAckRoundTripsHeadersAndBinaryData(t *testing.T) {
	h := newHarness(t)
	data := make([]byte, 256)
	for i := range data {
		data[i] = byte(i)
	}
	pub, err := h.strm.Publish(h.ctx(), &jetgatev1.PublishRequest{
		Stream:  stream,
		Subject: "orders.new",
		Data:    data,
		Headers: map[string]*jetgatev1.HeaderValues{
			"X-Multi":  {Values: []string{"a", "b", "a"}},
			"x-lower":  {Values: []string{"v"}},
			"X-Spaces": {Values: []string{"with  inner spaces"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	m := h.fetchOne(time.Second)
	if !bytes.Equal(m.GetData(), data) {
		t.Errorf("data changed in transit")
	}
	for k, want := range map[string][]string{"X-Multi": {"a", "b", "a"}, "x-lower": {"v"}, "X-Spaces": {"with  inner spaces"}} {
		if got := m.GetHeaders()[k].GetValues(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	md := m.GetMetadata()
	if md.GetStream() != stream || md.GetConsumer() != consumer || md.GetStreamSeq() != pub.GetSeq() ||
		md.GetNumDelivered() != 1 || md.GetConsumerSeq() != 1 || md.GetTimestamp().AsTime().IsZero() {
		t.Errorf("metadata %v", md)
	}
	if m.GetSubject() != "orders.new" || len(m.GetToken()) > token.MaxTokenLen || m.GetToken() == "" {
		t.Errorf("subject %q token %q", m.GetSubject(), m.GetToken())
	}
	dl := m.GetLeaseDeadline().AsTime()
	if until := time.Until(dl); until <= 0 || until > 30*time.Second {
		t.Errorf("lease deadline %v is not within ack_wait", dl)
	}
	wantNoFailures(t, ack(t, h, h.cons, m.GetToken()))
	natstest.Eventually(t, 5*time.Second, "ack floor moves", func() bool {
		return h.info(consumer).AckFloor.Stream == pub.GetSeq()
	})
}

func TestRedeliveryAfterAckWaitRaisesDeliveredCount(t *testing.T) {
	h := newHarness(t, ackWait(time.Second))
	h.publish(1)
	first := h.fetchOne(time.Second)
	second := h.fetchOne(5 * time.Second)
	if second.GetMetadata().GetNumDelivered() != 2 || second.GetMetadata().GetStreamSeq() != first.GetMetadata().GetStreamSeq() {
		t.Fatalf("redelivery metadata %v", second.GetMetadata())
	}
	if !first.GetLeaseDeadline().AsTime().Before(time.Now()) {
		t.Errorf("the first lease's deadline %v had not passed at redelivery", first.GetLeaseDeadline().AsTime())
	}
	// The first token is void: a newer delivery replaced it.
	wantFailure(t, ack(t, h, h.cons, first.GetToken(), second.GetToken()), 0, "LEASE_EXPIRED")
}

func TestNakRedeliversAtOnce(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	m := h.fetchOne(time.Second)
	wantNoFailures(t, nak(t, h, h.cons, 0, m.GetToken()))
	again := h.fetchOne(2 * time.Second)
	if again.GetMetadata().GetNumDelivered() != 2 {
		t.Fatalf("delivered %d, want 2", again.GetMetadata().GetNumDelivered())
	}
}

func TestNakWithDelayIsNotRedeliveredBeforeIt(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	m := h.fetchOne(time.Second)
	const delay = 1500 * time.Millisecond
	naked := time.Now()
	wantNoFailures(t, nak(t, h, h.cons, delay, m.GetToken()))
	if resp := h.fetch(h.cons, consumer, 1, 0); len(resp.GetMessages()) != 0 {
		t.Fatal("redelivered at once despite the delay")
	}
	again := h.fetchOne(10 * time.Second)
	if since := time.Since(naked); since < delay-100*time.Millisecond {
		t.Fatalf("redelivered %v after the nak, before its %v delay", since, delay)
	}
	if again.GetMetadata().GetNumDelivered() != 2 {
		t.Fatalf("delivered %d, want 2", again.GetMetadata().GetNumDelivered())
	}
}

func TestTermIsNeverRedelivered(t *testing.T) {
	h := newHarness(t, ackWait(time.Second))
	h.publish(1)
	m := h.fetchOne(time.Second)
	resp, err := h.cons.Term(h.ctx(), &jetgatev1.TermRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}, Reason: "poison"})
	if err != nil {
		t.Fatal(err)
	}
	wantNoFailures(t, resp.GetFailures())
	// Well past ack_wait: nothing comes back.
	if r := h.fetch(h.cons, consumer, 1, 2500*time.Millisecond); len(r.GetMessages()) != 0 {
		t.Fatalf("terminated message redelivered: %v", r.GetMessages()[0].GetMetadata())
	}
	if ci := h.info(consumer); ci.NumAckPending != 0 || ci.NumRedelivered != 0 {
		t.Fatalf("ack pending %d redelivered %d after term", ci.NumAckPending, ci.NumRedelivered)
	}
}

func TestExtendKeepsALeaseAlivePastAckWait(t *testing.T) {
	h := newHarness(t, ackWait(2*time.Second))
	h.publish(1)
	m := h.fetchOne(time.Second)
	tok := m.GetToken()
	end := time.Now().Add(5 * time.Second) // two and a half ack_waits
	for time.Now().Before(end) {
		waitUntil(time.Now().Add(500 * time.Millisecond))
		resp, err := h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{Stream: stream, Consumer: consumer, Tokens: []string{tok}})
		if err != nil {
			t.Fatal(err)
		}
		wantNoFailures(t, resp.GetFailures())
		if len(resp.GetLeases()) != 1 || resp.GetLeases()[0].GetNewToken() == "" {
			t.Fatalf("extend leases %v", resp.GetLeases())
		}
		l := resp.GetLeases()[0]
		if !l.GetLeaseDeadline().AsTime().After(time.Now()) {
			t.Fatalf("new deadline %v is not in the future", l.GetLeaseDeadline().AsTime())
		}
		tok = l.GetNewToken()
	}
	// Not redelivered while extended, and the original token still settles.
	if ci := h.info(consumer); ci.NumRedelivered != 0 {
		t.Fatalf("redelivered %d while extended", ci.NumRedelivered)
	}
	wantNoFailures(t, ack(t, h, h.cons, m.GetToken()))
}

// Extend reports the new deadline (a full ack_wait from now, less the
// margin), and the new token carries it: after the issuer is gone and past
// the original deadline, another replica settles the new token and refuses
// the old one.
func TestExtendedTokenCarriesTheNewDeadline(t *testing.T) {
	const wait = 2 * time.Second
	keys := token.RandomKeyring()
	h := newHarness(t, ackWait(wait), withKeys(keys))
	h.publish(1)
	m := h.fetchOne(time.Second)
	oldDeadline := m.GetLeaseDeadline().AsTime()
	waitUntil(time.Now().Add(wait / 2))
	before := time.Now()
	resp, err := h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}})
	if err != nil {
		t.Fatal(err)
	}
	wantNoFailures(t, resp.GetFailures())
	l := resp.GetLeases()[0]
	got := l.GetLeaseDeadline().AsTime()
	margin := lease.Margin(wait)
	if lo, hi := before.Add(wait-margin-50*time.Millisecond), time.Now().Add(wait-margin); got.Before(lo) || got.After(hi) || !got.After(oldDeadline) {
		t.Fatalf("extended deadline %v; want about now + ack_wait - margin (%v..%v) and after the old %v", got, lo, hi, oldDeadline)
	}
	h.gw.Close() // the issuer is gone
	_, cons2, _ := h.startGateway()
	waitUntil(oldDeadline.Add(50 * time.Millisecond))
	if !time.Now().Before(got) {
		t.Skip("the machine was too slow to settle before the extended deadline")
	}
	wantFailure(t, ack(t, h, cons2, m.GetToken()), 0, "LEASE_EXPIRED")
	wantNoFailures(t, ack(t, h, cons2, l.GetNewToken()))
	natstest.Eventually(t, 5*time.Second, "acked", func() bool { return h.info(consumer).NumAckPending == 0 })
}

// A caller that holds a lease's first token and the one its Extend gave,
// and acks with both in one request, acks the message once: both tokens
// are answered OK, and neither waits for the other (which used to end
// SETTLE_IN_PROGRESS after the request timeout).
func TestAnAckWithALeasesOldAndNewTokenAcksItOnce(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	m := h.fetchOne(time.Second)
	resp, err := h.cons.Extend(h.ctx(), &jetgatev1.ExtendRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}})
	if err != nil {
		t.Fatal(err)
	}
	wantNoFailures(t, resp.GetFailures())
	wantNoFailures(t, ack(t, h, h.cons, m.GetToken(), resp.GetLeases()[0].GetNewToken()))
	natstest.Eventually(t, 5*time.Second, "acked", func() bool { return h.info(consumer).NumAckPending == 0 })
}

func TestSettleAfterDeadlineFailsAndSendsNothing(t *testing.T) {
	h := newHarness(t, ackWait(time.Second))
	h.publish(2)
	resp := h.fetch(h.cons, consumer, 2, time.Second)
	if len(resp.GetMessages()) != 2 {
		t.Fatalf("got %d messages", len(resp.GetMessages()))
	}
	late, onTime := resp.GetMessages()[0], resp.GetMessages()[1]
	wantNoFailures(t, ack(t, h, h.cons, onTime.GetToken()))
	tp := h.tap()
	waitUntil(late.GetLeaseDeadline().AsTime().Add(10 * time.Millisecond))
	fs := ack(t, h, h.cons, late.GetToken())
	wantFailure(t, fs, 0, "LEASE_EXPIRED")
	if fs[0].GetCode() != int32(codes.FailedPrecondition) {
		t.Errorf("code %d, want FAILED_PRECONDITION", fs[0].GetCode())
	}
	// Repeating the on-time ack succeeds without reaching NATS either; then a
	// fresh settle is the first thing the tap sees.
	wantNoFailures(t, ack(t, h, h.cons, onTime.GetToken()))
	redelivered := h.fetchOne(5 * time.Second)
	wantNoFailures(t, ack(t, h, h.cons, redelivered.GetToken()))
	if m := tp.next(t); !strings.Contains(m.Subject, ".2.") || string(m.Data) != "+ACK" {
		t.Fatalf("first settle on the wire: %s %q, want the redelivery's ack", m.Subject, m.Data)
	}
}

func TestRepeatedAckIsIdempotentAndNakAfterAckFails(t *testing.T) {
	h := newHarness(t)
	seqs := h.publish(2)
	resp := h.fetch(h.cons, consumer, 2, time.Second)
	if len(resp.GetMessages()) != 2 {
		t.Fatalf("fetched %d messages, want 2", len(resp.GetMessages()))
	}
	m, marker := resp.GetMessages()[0], resp.GetMessages()[1]
	tp := h.tap()
	wantNoFailures(t, ack(t, h, h.cons, m.GetToken()))
	wantNoFailures(t, ack(t, h, h.cons, m.GetToken()))
	wantFailure(t, nak(t, h, h.cons, 0, m.GetToken()), 0, "LEASE_SETTLED")
	// The marker's Ack leaves the gateway after anything the repeats could
	// have sent, on the same connection: the wire shows whatever they sent
	// before it.
	wantNoFailures(t, ack(t, h, h.cons, marker.GetToken()))
	for _, want := range []uint64{seqs[0], seqs[1]} {
		got := tp.next(t)
		md := strings.Split(got.Subject, ".")
		if len(md) < 6 || md[5] != strconv.FormatUint(want, 10) || string(got.Data) != "+ACK" {
			t.Fatalf("settle on the wire: %s %q; want +ACK of stream seq %d (a repeat reached NATS)", got.Subject, got.Data, want)
		}
	}
}

func TestOneBatchReportsEachTokenOnItsOwn(t *testing.T) {
	h := newHarness(t, ackWait(time.Second))
	h.publish(2)
	expired := h.fetchOne(time.Second)
	waitUntil(expired.GetLeaseDeadline().AsTime().Add(10 * time.Millisecond))
	live := h.fetchOne(time.Second)
	otherMsg := h.fetch(h.cons, other, 1, time.Second).GetMessages()[0]
	forged := []byte(live.GetToken())
	forged[len(forged)/2] ^= 1
	fs := ack(t, h, h.cons, live.GetToken(), expired.GetToken(), string(forged), otherMsg.GetToken(), "", strings.Repeat("A", 300))
	if len(fs) != 5 {
		t.Fatalf("failures %v, want 5", fs)
	}
	wantFailure(t, fs, 1, "LEASE_EXPIRED")
	wantFailure(t, fs, 2, "TOKEN_INVALID")
	wantFailure(t, fs, 3, "TOKEN_WRONG_CONSUMER")
	wantFailure(t, fs, 4, "TOKEN_INVALID")
	wantFailure(t, fs, 5, "TOKEN_INVALID")
	for _, f := range fs {
		if f.GetIndex() == 0 {
			t.Fatalf("the live token failed: %s", f.GetReason())
		}
	}
}

func TestTamperedAndTruncatedTokensAreRejected(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	tok := h.fetchOne(time.Second).GetToken()
	var bad []string
	for i := 0; i < len(tok); i++ {
		b := []byte(tok)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		bad = append(bad, string(b))
	}
	for n := 1; n < len(tok); n += 3 {
		bad = append(bad, tok[:n])
	}
	fs := ack(t, h, h.cons, bad...)
	if len(fs) != len(bad) {
		t.Fatalf("%d of %d altered tokens failed", len(fs), len(bad))
	}
	for _, f := range fs {
		if r := f.GetReason(); r != "TOKEN_INVALID" && r != "TOKEN_UNKNOWN_KEY" {
			t.Errorf("altered token %d: %s", f.GetIndex(), f.GetReason())
		}
	}
	wantNoFailures(t, ack(t, h, h.cons, tok))
}

func TestMaxAckPendingHoldsFetchUntilAcksFreeRoom(t *testing.T) {
	h := newHarness(t, maxAckPending(2))
	h.publish(3)
	first := h.fetch(h.cons, consumer, 10, time.Second).GetMessages()
	if len(first) != 2 {
		t.Fatalf("fetched %d, want max_ack_pending 2", len(first))
	}
	resp := h.fetch(h.cons, consumer, 10, 500*time.Millisecond)
	if len(resp.GetMessages()) != 0 || resp.GetEmptyReason() != jetgatev1.EmptyReason_EMPTY_REASON_MAX_ACK_PENDING {
		t.Fatalf("at max_ack_pending: %d messages, reason %v", len(resp.GetMessages()), resp.GetEmptyReason())
	}
	wantNoFailures(t, ack(t, h, h.cons, first[0].GetToken()))
	m := h.fetchOne(5 * time.Second)
	if m.GetMetadata().GetStreamSeq() != 3 {
		t.Fatalf("got seq %d, want 3", m.GetMetadata().GetStreamSeq())
	}
}

func TestFetchReturnsAsSoonAsAMessageArrives(t *testing.T) {
	h := newHarness(t)
	got := make(chan *jetgatev1.FetchResponse, 1)
	start := time.Now()
	go func() {
		resp, err := h.cons.Fetch(context.Background(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: 10, Expires: durationpb.New(20 * time.Second)})
		if err != nil {
			t.Error(err)
		}
		got <- resp
	}()
	natstest.Eventually(t, 5*time.Second, "pull waiting", func() bool { return h.info(consumer).NumWaiting > 0 })
	h.publish(1)
	resp := <-got
	if len(resp.GetMessages()) != 1 {
		t.Fatalf("got %d messages", len(resp.GetMessages()))
	}
	if time.Since(start) > 10*time.Second {
		t.Fatal("fetch waited out its expiry instead of returning on the first message")
	}
	// No pull of that Fetch is left open on the server.
	natstest.Eventually(t, 5*time.Second, "no waiting pulls", func() bool { return h.info(consumer).NumWaiting == 0 })
}

func TestFetchIsEmptyWhenExpiresPasses(t *testing.T) {
	h := newHarness(t)
	resp := h.fetch(h.cons, consumer, 5, 300*time.Millisecond)
	if len(resp.GetMessages()) != 0 || resp.GetEmptyReason() != jetgatev1.EmptyReason_EMPTY_REASON_NO_MESSAGES {
		t.Fatalf("%d messages, reason %v", len(resp.GetMessages()), resp.GetEmptyReason())
	}
	resp = h.fetch(h.cons, consumer, 5, 0)
	if len(resp.GetMessages()) != 0 {
		t.Fatal("messages from an empty consumer")
	}
}

func TestFetchWithZeroExpiresReturnsWhatIsAvailable(t *testing.T) {
	h := newHarness(t)
	h.publish(3)
	resp := h.fetch(h.cons, consumer, 10, 0)
	if len(resp.GetMessages()) != 3 {
		t.Fatalf("got %d messages, want the 3 available", len(resp.GetMessages()))
	}
}

func TestCanceledFetchDoesNotStrandAMessage(t *testing.T) {
	h := newHarness(t) // ack_wait 30s: stranding would show as a 30s wait
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.cons.Fetch(ctx, &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Expires: durationpb.New(20 * time.Second)})
		done <- err
	}()
	natstest.Eventually(t, 5*time.Second, "pull waiting", func() bool { return h.info(consumer).NumWaiting > 0 })
	cancel()
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Fatalf("canceled fetch: %v", err)
	}
	// The client gives up at once; the gateway hears of it a moment later.
	// A message that came in between would be answered to a caller already
	// gone, which no gateway can help: publish only once the Fetch has left
	// its pull to the orphan pool.
	natstest.Eventually(t, 5*time.Second, "the canceled Fetch's pull abandoned", func() bool {
		u, err := h.gw.Pulls(stream, consumer)
		return err == nil && u.Abandoned == 1
	})
	// The canceled Fetch's pull is still open on the server, so this message
	// goes to it; the gateway must pass it on.
	h.publish(1)
	start := time.Now()
	m := h.fetchOne(10 * time.Second)
	if time.Since(start) > 5*time.Second {
		t.Fatalf("message came after %v", time.Since(start))
	}
	wantNoFailures(t, ack(t, h, h.cons, m.GetToken()))
}

func TestMessagePublishedAfterAFetchGoesToTheNext(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	m := h.fetchOne(time.Second)
	wantNoFailures(t, ack(t, h, h.cons, m.GetToken()))
	h.publish(1)
	start := time.Now()
	next := h.fetchOne(10 * time.Second)
	if next.GetMetadata().GetNumDelivered() != 1 || time.Since(start) > 5*time.Second {
		t.Fatalf("next message delivered %d times after %v", next.GetMetadata().GetNumDelivered(), time.Since(start))
	}
}

func TestAnotherReplicaSettlesThroughTheIssuer(t *testing.T) {
	h := newHarness(t)
	_, cons2, _ := h.startGateway()
	h.publish(2)
	msgs := h.fetch(h.cons, consumer, 2, time.Second).GetMessages()
	if len(msgs) != 2 {
		t.Fatalf("got %d", len(msgs))
	}
	wantNoFailures(t, ack(t, h, cons2, msgs[0].GetToken()))
	// The issuer knows: a Nak through it now fails.
	wantFailure(t, nak(t, h, h.cons, 0, msgs[0].GetToken()), 0, "LEASE_SETTLED")
	ext, err := cons2.Extend(h.ctx(), &jetgatev1.ExtendRequest{Stream: stream, Consumer: consumer, Tokens: []string{msgs[1].GetToken()}})
	if err != nil {
		t.Fatal(err)
	}
	wantNoFailures(t, ext.GetFailures())
	wantNoFailures(t, ack(t, h, h.cons, ext.GetLeases()[0].GetNewToken()))
	natstest.Eventually(t, 5*time.Second, "both acked", func() bool { return h.info(consumer).NumAckPending == 0 })
}

func TestRestartedGatewaySettlesOldTokens(t *testing.T) {
	keys := token.RandomKeyring()
	h := newHarness(t, withKeys(keys))
	h.publish(1)
	m := h.fetchOne(time.Second)
	h.gw.Close() // the issuer is gone
	_, cons2, _ := h.startGateway()
	wantNoFailures(t, ack(t, h, cons2, m.GetToken()))
	wantNoFailures(t, ack(t, h, cons2, m.GetToken()))
	wantFailure(t, nak(t, h, cons2, 0, m.GetToken()), 0, "LEASE_SETTLED")
	natstest.Eventually(t, 5*time.Second, "acked", func() bool { return h.info(consumer).NumAckPending == 0 })
}

func TestGatewayWithAnotherKeyRejectsTokens(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	m := h.fetchOne(time.Second)
	h.cfg.keys = token.RandomKeyring()
	_, cons2, _ := h.startGateway()
	fs := ack(t, h, cons2, m.GetToken())
	wantFailure(t, fs, 0, "TOKEN_UNKNOWN_KEY")
	if msg := fs[0].GetMessage(); !strings.Contains(msg, "this gateway's key lasts only as long as its process: give every replica the same --token-key-file") {
		t.Fatalf("a gateway on a random key does not say why: %q", msg)
	}
}

func TestGetConsumerReportsConfigStateAndLeases(t *testing.T) {
	h := newHarness(t)
	h.publish(3)
	h.fetch(h.cons, consumer, 2, time.Second)
	// The server counts a stored message as pending a moment after its
	// PubAck: GetConsumer reports the server's count, once it has it.
	natstest.Eventually(t, 5*time.Second, "the server counting one pending", func() bool { return h.info(consumer).NumPending == 1 })
	resp, err := h.cons.GetConsumer(h.ctx(), &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: consumer})
	if err != nil {
		t.Fatal(err)
	}
	c, s := resp.GetConfig(), resp.GetState()
	if c.GetAckWait().AsDuration() != 30*time.Second || c.GetMaxAckPending() != 1024 ||
		c.GetDeliverPolicy() != jetgatev1.DeliverPolicy_DELIVER_POLICY_ALL || c.GetAckPolicy() != jetgatev1.AckPolicy_ACK_POLICY_EXPLICIT ||
		c.GetMaxDeliver() != -1 || c.GetMaxWaiting() != 512 {
		t.Errorf("config %v", c)
	}
	if s.GetNumPending() != 1 || s.GetNumAckPending() != 2 || s.GetDelivered().GetStreamSeq() != 2 {
		t.Errorf("state %v", s)
	}
	if resp.GetGatewayLeases() != 2 {
		t.Errorf("gateway leases %d, want 2", resp.GetGatewayLeases())
	}
}

func TestPublishDeduplicatesAndGuardsSubjects(t *testing.T) {
	h := newHarness(t)
	req := &jetgatev1.PublishRequest{Stream: stream, Subject: "orders.eu.1", Data: []byte("x"), MsgId: "order-1"}
	first, err := h.strm.Publish(h.ctx(), req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.strm.Publish(h.ctx(), req)
	if err != nil {
		t.Fatal(err)
	}
	if first.GetDuplicate() || !again.GetDuplicate() || again.GetSeq() != first.GetSeq() || first.GetStream() != stream {
		t.Fatalf("first %v again %v", first, again)
	}
	for _, tc := range []struct {
		stream, subject string
		code            codes.Code
		reason          string
	}{
		{stream, "payments.1", codes.InvalidArgument, "SUBJECT_NOT_ALLOWED"},
		{stream, "$JS.API.STREAM.DELETE.ORDERS", codes.InvalidArgument, "SUBJECT_NOT_ALLOWED"},
		{stream, "orders.*", codes.InvalidArgument, "INVALID_ARGUMENT"},
		{stream, "", codes.InvalidArgument, "INVALID_ARGUMENT"},
		{"NOPE", "orders.1", codes.NotFound, "STREAM_NOT_FOUND"},
	} {
		_, err := h.strm.Publish(h.ctx(), &jetgatev1.PublishRequest{Stream: tc.stream, Subject: tc.subject})
		wantCode(t, err, tc.code, tc.reason)
	}
}

func TestBadRequestsAreRejected(t *testing.T) {
	h := newHarness(t)
	many := make([]string, 1001)
	for i := range many {
		many[i] = "x"
	}
	for name, call := range map[string]func() error{
		"batch over max": func() error {
			_, err := h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: 1001})
			return err
		},
		"negative batch": func() error {
			_, err := h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: -1})
			return err
		},
		"negative expires": func() error {
			_, err := h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Expires: durationpb.New(-time.Second)})
			return err
		},
		"no tokens": func() error {
			_, err := h.cons.Ack(h.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer})
			return err
		},
		"too many tokens": func() error {
			_, err := h.cons.Nak(h.ctx(), &jetgatev1.NakRequest{Stream: stream, Consumer: consumer, Tokens: many})
			return err
		},
		"negative delay": func() error {
			_, err := h.cons.Nak(h.ctx(), &jetgatev1.NakRequest{Stream: stream, Consumer: consumer, Tokens: []string{"x"}, Delay: durationpb.New(-time.Second)})
			return err
		},
		"no stream": func() error {
			_, err := h.cons.Term(h.ctx(), &jetgatev1.TermRequest{Consumer: consumer, Tokens: []string{"x"}})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) { wantCode(t, call(), codes.InvalidArgument, "INVALID_ARGUMENT") })
	}
	for name, call := range map[string]func() error{
		"unknown consumer": func() error {
			_, err := h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: "nope"})
			return err
		},
		"unknown stream": func() error {
			_, err := h.cons.Ack(h.ctx(), &jetgatev1.AckRequest{Stream: "NOPE", Consumer: consumer, Tokens: []string{"x"}})
			return err
		},
		"unknown consumer info": func() error {
			_, err := h.cons.GetConsumer(h.ctx(), &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: "nope"})
			return err
		},
	} {
		t.Run(name, func(t *testing.T) { wantCode(t, call(), codes.NotFound, "CONSUMER_NOT_FOUND") })
	}
}

func TestDeletedConsumerIsNotFound(t *testing.T) {
	h := newHarness(t)
	if err := h.js.DeleteConsumer(h.ctx(), stream, consumer); err != nil {
		t.Fatal(err)
	}
	_, err := h.cons.GetConsumer(h.ctx(), &jetgatev1.GetConsumerRequest{Stream: stream, Consumer: consumer})
	wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
}

func TestLostNATSFailsFastWithUnavailable(t *testing.T) {
	h := newHarness(t)
	h.ns.Shutdown()
	h.ns.WaitForShutdown()
	start := time.Now()
	_, err := h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Expires: durationpb.New(20 * time.Second)})
	wantCode(t, err, codes.Unavailable, "NATS_UNAVAILABLE")
	if time.Since(start) > 10*time.Second {
		t.Fatalf("took %v to notice NATS is gone", time.Since(start))
	}
	if err := h.gw.Ready(); !errors.Is(err, errs.ErrUnavailable) {
		t.Fatalf("ready: %v", err)
	}
}

func TestNATSLostDuringAWaitingFetchEndsItWithUnavailable(t *testing.T) {
	h := newHarness(t)
	done := h.waitingFetch(h.cons)
	h.ns.Shutdown()
	r := <-done
	wantCode(t, r.err, codes.Unavailable, "NATS_UNAVAILABLE")
	if took := r.took; took > 10*time.Second {
		t.Fatalf("the fetch hung for %v after NATS went away", took)
	}
}

func TestPartitionedNATSEndsAWaitingFetchWithUnavailable(t *testing.T) {
	h := newHarness(t)
	proxy := natstest.StartProxy(t, h.ns.Addr().String())
	g := gwtest.Start(t, replica.Options{
		Conn:      natstest.Connect(t, h.ns, nats.DontRandomize(), nats.SetCustomDialer(proxyDialer{proxy.Addr})),
		Consumers: []coreconsumer.Config{{Stream: stream, Name: consumer, AckWait: 30 * time.Second, MaxAckPending: 1024}},
		Keys:      token.RandomKeyring(),
	})
	done := h.waitingFetch(g.Consumers)
	proxy.Blackhole() // no goodbye from the server: only missing heartbeats tell
	r := <-done
	wantCode(t, r.err, codes.Unavailable, "NATS_UNAVAILABLE")
	// Heartbeats every second: three missed end it, well before expires.
	if took := r.took; took > 10*time.Second {
		t.Fatalf("the fetch hung for %v after NATS went silent", took)
	}
}

type fetchResult struct {
	err  error
	took time.Duration
}

// waitingFetch starts a long Fetch through c and returns once its pull is
// waiting on the server; the Fetch's end comes on the channel.
func (h *harness) waitingFetch(c jetgatev1.ConsumerServiceClient) <-chan fetchResult {
	h.t.Helper()
	done := make(chan fetchResult, 1)
	go func() {
		start := time.Now()
		_, err := c.Fetch(context.Background(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Expires: durationpb.New(25 * time.Second)})
		done <- fetchResult{err, time.Since(start)}
	}()
	natstest.Eventually(h.t, 5*time.Second, "pull waiting", func() bool { return h.info(consumer).NumWaiting > 0 })
	return done
}

// proxyDialer sends every NATS dial to the proxy.
type proxyDialer struct{ addr string }

func (d proxyDialer) Dial(network, _ string) (net.Conn, error) { return net.Dial(network, d.addr) }

func TestFetchAndSettleOnADeletedConsumerAreNotFound(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	m := h.fetchOne(time.Second)
	if err := h.js.DeleteConsumer(h.ctx(), stream, consumer); err != nil {
		t.Fatal(err)
	}
	_, err := h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Expires: durationpb.New(time.Second)})
	wantCode(t, err, codes.NotFound, "CONSUMER_NOT_FOUND")
	wantFailure(t, ack(t, h, h.cons, m.GetToken()), 0, "CONSUMER_NOT_FOUND")
}

func TestFetchHonoursMaxBytes(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 3; i++ {
		if _, err := h.js.Publish(h.ctx(), "orders.big", bytes.Repeat([]byte{'x'}, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	maxBytes := int64(100)
	resp, err := h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: 3, MaxBytes: &maxBytes, Expires: durationpb.New(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetMessages()) != 0 || resp.GetEmptyReason() != jetgatev1.EmptyReason_EMPTY_REASON_MAX_BYTES {
		t.Fatalf("a 1000-byte message under max_bytes 100: %d messages, reason %v", len(resp.GetMessages()), resp.GetEmptyReason())
	}
	maxBytes = 2500
	resp, err = h.cons.Fetch(h.ctx(), &jetgatev1.FetchRequest{Stream: stream, Consumer: consumer, Batch: 3, MaxBytes: &maxBytes, Expires: durationpb.New(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(resp.GetMessages()); n != 2 {
		t.Fatalf("max_bytes 2500 over 1000-byte messages: got %d, want 2", n)
	}
}

func TestSettleWithNATSUnreachableIsUnavailable(t *testing.T) {
	h := newHarness(t)
	h.publish(1)
	m := h.fetchOne(time.Second)
	h.ns.Shutdown()
	h.ns.WaitForShutdown()
	natstest.Eventually(t, 5*time.Second, "gateway notices", func() bool { return h.gw.Ready() != nil })
	_, err := h.cons.Ack(h.ctx(), &jetgatev1.AckRequest{Stream: stream, Consumer: consumer, Tokens: []string{m.GetToken()}})
	wantCode(t, err, codes.Unavailable, "NATS_UNAVAILABLE")
}
