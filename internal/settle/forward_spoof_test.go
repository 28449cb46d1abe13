package settle_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/natstest"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

// A client of the account that saw one of a sender's reply subjects (here
// on _INBOX.>) and answers the next ones with a "no responders" status,
// which no signature covers, does not make a forward take its live issuer
// for gone: the reply subjects' ids are random, not counted on. Counted,
// the forward failed ISSUER_GONE and its replica settled the issuer's lease
// from the token, beside the issuer (a helper's test, 8 of 8 runs).
func TestAStrangerCannotAnswerAForwardByCountingOnItsReplySubjects(t *testing.T) {
	ns := natstest.Start(t)
	nc := natstest.Connect(t, ns)
	s := newSender(t, nc, 2*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seen := make(chan string, 1)
	subscribe(t, nc, "probe", func(m *nats.Msg) {
		seen <- m.Reply
		_ = m.Respond(nil)
	})
	if errs := s.Send(ctx, []string{"probe"}, []byte("+ACK")); errs[0] != nil {
		t.Fatal(errs[0])
	}
	reply := <-seen
	dot := strings.LastIndexByte(reply, '.')
	prefix, last := reply[:dot], reply[dot+1:]

	stranger := natstest.Connect(t, ns)
	spray := func() { // the next ids, as counted in base 10 or 36
		for _, base := range []int{10, 36} {
			n, err := strconv.ParseUint(last, base, 64)
			if err != nil {
				continue
			}
			for i := n + 1; i <= n+64; i++ {
				m := &nats.Msg{Subject: prefix + "." + strconv.FormatUint(i, base), Header: nats.Header{}}
				m.Header.Set("Status", "503")
				_ = stranger.PublishMsg(m)
			}
		}
		if err := stranger.Flush(); err != nil {
			t.Error(err)
		}
	}
	keys, issuer := token.RandomKeyring(), token.NewIssuerID()
	subscribe(t, nc, settle.Subject(issuer), func(m *nats.Msg) { // the issuer, alive: it answers once the stranger has
		f, err := settle.DecodeForward(keys, m, time.Now())
		if err != nil {
			t.Error(err)
			return
		}
		spray()
		if err := settle.Reply(keys, m, f, make([]settle.Outcome, len(f.Tokens))); err != nil {
			t.Error(err)
		}
	})
	out, err := s.SendForward(ctx, keys, issuer, settle.Forward{Request: settle.Request{Op: lease.OpAck, Stream: "ORDERS", Consumer: "billing", Tokens: []string{"t"}}})
	if err != nil || len(out) != 1 || out[0].Err != nil {
		t.Fatalf("the forward: %+v, %v; want the issuer's answer, OK", out, err)
	}
}
