package replica

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/jetgate/jetgate/internal/lease"
)

// ListLeases asks every replica of a consumer who holds its leases. The
// replica asked answers for its own at once and asks the others on
// leasesSubject: one request, which every replica takes and the replicas
// serving the consumer answer. Both ways are signed with the shared token
// key, as forwarded settles are (settle/forward.go): a NATS client that is
// not a replica can neither ask nor answer.
const leasesSubject = "_JETGATE.LEASES"

// leasesWait bounds how long the replicas have to answer; one that has not
// answered by then is named as missing.
const leasesWait = 2 * time.Second

// leasesWindow is how far a question's timestamp may be from the
// answerer's clock.
const leasesWindow = 2 * time.Minute

// leasesSig carries the signature of a question or of its answer.
const leasesSig = "Jetgate-Sig"

// liveReplicas names the replicas that serve a consumer. Today the roster
// does (roster.Roster.Serving); leasesOf is the one place that asks.
type liveReplicas interface {
	Serving(ctx context.Context, stream, consumer string) ([]string, error)
}

// live is where the replica learns which replicas serve a consumer.
func (l *lister) live() liveReplicas { return l.roster }

// LeaseReport is who holds a consumer's leases, across replicas.
type LeaseReport struct {
	Holders  []ReplicaHolder
	Replicas []string // answered, this one included
	Missing  []string // serve the consumer, did not answer in time
}

// ReplicaHolder is one principal's leases on the replicas that answered.
type ReplicaHolder struct {
	lease.Holder
	Replicas []string
}

type leasesQuestion struct {
	Stream   string `json:"stream"`
	Consumer string `json:"consumer"`
	From     string `json:"from"`
	Sent     int64  `json:"sent_ms"`
	Nonce    string `json:"nonce"`
}

type leasesAnswer struct {
	Replica string       `json:"replica"`
	Holders []wireHolder `json:"holders"`
}

type wireHolder struct {
	Principal string `json:"principal"`
	Leases    int    `json:"leases"`
	Oldest    int64  `json:"oldest_ms"`
	Latest    int64  `json:"latest_ms,omitempty"`
	Kept      int    `json:"kept,omitempty"`
}

// Leases reports who holds the leases of a consumer the replica serves,
// on every replica of it.
func (l *lister) Leases(ctx context.Context, stream, name string) (LeaseReport, error) {
	c, done, err := l.binder.consumer(ctx, stream, name)
	if err != nil {
		return LeaseReport{}, err
	}
	defer done()
	self := l.self.String()
	answers := map[string][]lease.Holder{self: c.Holders()}
	peers, err := l.live().Serving(ctx, stream, name)
	if err != nil {
		return LeaseReport{}, natsError(ctx, "the replicas of the consumer", err)
	}
	peers = slices.DeleteFunc(peers, func(id string) bool { return id == self })
	if len(peers) > 0 {
		if err := l.askLeases(ctx, stream, name, peers, answers); err != nil {
			return LeaseReport{}, err
		}
	}
	return report(answers, peers), nil
}

// askLeases asks the replicas for their leases of the consumer and adds
// each verified answer to answers, until every one of peers has answered
// or leasesWait has passed.
func (l *lister) askLeases(ctx context.Context, stream, name string, peers []string, answers map[string][]lease.Holder) error {
	var nonce [12]byte
	_, _ = rand.Read(nonce[:])
	q := leasesQuestion{Stream: stream, Consumer: name, From: l.self.String(), Sent: time.Now().UnixMilli(),
		Nonce: base64.RawURLEncoding.EncodeToString(nonce[:])}
	body, _ := json.Marshal(q)
	inbox := l.nc.NewInbox()
	sub, err := l.nc.SubscribeSync(inbox)
	if err != nil {
		return natsError(ctx, "ask the other replicas", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	m := &nats.Msg{Subject: leasesSubject, Reply: inbox, Data: body, Header: nats.Header{}}
	m.Header.Set(leasesSig, l.keys.Sign([]byte(leasesSubject), body))
	if err := l.nc.PublishMsg(m); err != nil {
		return natsError(ctx, "ask the other replicas", err)
	}
	wctx, cancel := context.WithTimeout(ctx, leasesWait)
	defer cancel()
	for waiting := len(peers); waiting > 0; {
		a, err := sub.NextMsgWithContext(wctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil // the rest are missing
		}
		var ans leasesAnswer
		if !l.keys.Verify(a.Header.Get(leasesSig), []byte("leases"), []byte(q.Nonce), a.Data) || json.Unmarshal(a.Data, &ans) != nil {
			continue
		}
		if _, dup := answers[ans.Replica]; dup {
			continue
		}
		hs := make([]lease.Holder, len(ans.Holders))
		for i, h := range ans.Holders {
			hs[i] = lease.Holder{Principal: h.Principal, Leases: h.Leases, Oldest: time.UnixMilli(h.Oldest), Latest: time.UnixMilli(h.Latest), Kept: h.Kept}
		}
		answers[ans.Replica] = hs
		if slices.Contains(peers, ans.Replica) {
			waiting--
		}
	}
	return nil
}

// onLeases answers another replica's question about a consumer this
// replica serves; a question it cannot verify, or about a consumer it does
// not serve, gets no answer.
func (l *lister) onLeases(m *nats.Msg) {
	if m.Reply == "" || !l.keys.Verify(m.Header.Get(leasesSig), []byte(m.Subject), m.Data) {
		return
	}
	var q leasesQuestion
	if json.Unmarshal(m.Data, &q) != nil || q.From == l.self.String() {
		return
	}
	now := time.Now()
	if sent := time.UnixMilli(q.Sent); sent.Before(now.Add(-leasesWindow)) || sent.After(now.Add(leasesWindow)) {
		return
	}
	c := l.binder.bound(q.Stream, q.Consumer) // a question binds nothing: an unbound consumer holds no lease here
	if c == nil {
		return
	}
	ans := leasesAnswer{Replica: l.self.String(), Holders: []wireHolder{}}
	for _, h := range c.Holders() {
		ans.Holders = append(ans.Holders, wireHolder{Principal: h.Principal, Leases: h.Leases, Oldest: h.Oldest.UnixMilli(), Latest: h.Latest.UnixMilli(), Kept: h.Kept})
	}
	body, _ := json.Marshal(ans)
	out := &nats.Msg{Subject: m.Reply, Data: body, Header: nats.Header{}}
	out.Header.Set(leasesSig, l.keys.Sign([]byte("leases"), []byte(q.Nonce), body))
	_ = l.nc.PublishMsg(out)
}

// subscribeLeases takes other replicas' questions about leases.
func (l *lister) subscribe() error {
	var err error
	if l.sub, err = l.nc.Subscribe(leasesSubject, l.onLeases); err != nil {
		return fmt.Errorf("subscribe leases subject: %w", err)
	}
	return nil
}

// report merges the answers by principal; peers that did not answer are
// missing.
func report(answers map[string][]lease.Holder, peers []string) LeaseReport {
	var rep LeaseReport
	by := map[string]*ReplicaHolder{}
	for id, hs := range answers {
		rep.Replicas = append(rep.Replicas, id)
		for _, h := range hs {
			m := by[h.Principal]
			if m == nil {
				m = &ReplicaHolder{Holder: lease.Holder{Principal: h.Principal, Oldest: h.Oldest}}
				by[h.Principal] = m
			}
			m.Leases += h.Leases
			m.Kept += h.Kept
			if h.Oldest.Before(m.Oldest) {
				m.Oldest = h.Oldest
			}
			if h.Latest.After(m.Latest) {
				m.Latest = h.Latest
			}
			m.Replicas = append(m.Replicas, id)
		}
	}
	for _, id := range peers {
		if _, ok := answers[id]; !ok {
			rep.Missing = append(rep.Missing, id)
		}
	}
	for _, h := range by {
		slices.Sort(h.Replicas)
		rep.Holders = append(rep.Holders, *h)
	}
	slices.SortFunc(rep.Holders, func(a, b ReplicaHolder) int {
		return cmp.Or(cmp.Compare(b.Leases, a.Leases), cmp.Compare(a.Principal, b.Principal))
	})
	slices.Sort(rep.Replicas)
	slices.Sort(rep.Missing)
	return rep
}
