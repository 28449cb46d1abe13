package settle_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
	"github.com/jetgate/jetgate/internal/settle"
	"github.com/jetgate/jetgate/internal/token"
)

func keyring(t *testing.T, fill byte) *token.Keyring {
	t.Helper()
	kr, err := token.NewKeyring(bytes.Repeat([]byte{fill}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return kr
}

func claims(issuer token.IssuerID, seq uint64) token.Claims {
	return token.Claims{
		Issuer:      issuer,
		StreamSeq:   seq,
		ConsumerSeq: seq + 100,
		Delivered:   1 + seq%3,
		Deadline:    time.UnixMilli(1_700_000_000_000 + int64(seq)),
	}
}

func sameClaims(a, b token.Claims) bool {
	return a.Issuer == b.Issuer && a.StreamSeq == b.StreamSeq && a.ConsumerSeq == b.ConsumerSeq &&
		a.Delivered == b.Delivered && a.Deadline.Equal(b.Deadline)
}

// wantBatch checks that b holds exactly the tokens at indexes idx of
// tokens, in request order, each with its claims.
func wantBatch(t *testing.T, name string, b settle.Batch, tokens []string, want map[int]token.Claims, idx ...int) {
	t.Helper()
	if len(b.Claims) != len(idx) || len(b.Tokens) != len(idx) || len(b.Index) != len(idx) {
		t.Fatalf("%s: %d claims, %d tokens, %d indexes; want %d of each (indexes %v)", name, len(b.Claims), len(b.Tokens), len(b.Index), len(idx), idx)
	}
	for k, i := range idx {
		if b.Index[k] != i {
			t.Errorf("%s[%d]: index %d, want %d", name, k, b.Index[k], i)
			continue
		}
		if b.Tokens[k] != tokens[i] {
			t.Errorf("%s[%d]: not the token at index %d", name, k, i)
		}
		if !sameClaims(b.Claims[k], want[i]) {
			t.Errorf("%s[%d]: claims %+v, want %+v", name, k, b.Claims[k], want[i])
		}
	}
}

func TestPartition(t *testing.T) {
	const stream, consumer, principal = "ORDERS", "billing", "alice"
	keys := keyring(t, 'k')
	self, peerA, peerB := token.NewIssuerID(), token.NewIssuerID(), token.NewIssuerID()

	// A genuine token of self's, altered to name peer A as its issuer.
	raw, err := base64.RawURLEncoding.DecodeString(keys.Seal(claims(self, 3), stream, consumer, principal))
	if err != nil {
		t.Fatal(err)
	}
	copy(raw[5:13], peerA[:]) // version(1) keyID(4) issuer(8)
	forged := base64.RawURLEncoding.EncodeToString(raw)

	want := map[int]token.Claims{}
	tokens := make([]string, 0, 12)
	seal := func(kr *token.Keyring, c token.Claims, stream, consumer, principal string) {
		want[len(tokens)] = c
		tokens = append(tokens, kr.Seal(c, stream, consumer, principal))
	}
	seal(keys, claims(peerA, 1), stream, consumer, principal)           // 0: peer A
	seal(keys, claims(self, 2), stream, consumer, principal)            // 1: self
	tokens = append(tokens, forged)                                     // 2: altered
	seal(keys, claims(peerB, 4), stream, consumer, principal)           // 3: peer B
	seal(keys, claims(self, 5), stream, "shipping", principal)          // 4: another consumer
	seal(keys, claims(peerA, 6), stream, consumer, principal)           // 5: peer A
	seal(keys, claims(self, 7), stream, consumer, "mallory")            // 6: another principal
	seal(keyring(t, 'x'), claims(self, 8), stream, consumer, principal) // 7: unknown key
	seal(keys, claims(self, 9), stream, consumer, principal)            // 8: self
	tokens = append(tokens, "")                                         // 9: empty
	tokens = append(tokens, "not a token")                              // 10: garbage
	seal(keys, claims(peerB, 12), "INVOICES", consumer, principal)      // 11: another stream's consumer

	sentinel := errors.New("untouched")
	out := make([]settle.Outcome, len(tokens))
	for i := range out {
		out[i].Err = sentinel
	}
	p := settle.Partition(keys, self, tokens, stream, consumer, principal, out)

	wantBatch(t, "Local", p.Local, tokens, want, 1, 8)
	if len(p.Remote) != 2 {
		t.Fatalf("Remote has %d issuers, want 2 (peers A and B)", len(p.Remote))
	}
	if _, ok := p.Remote[self]; ok {
		t.Error("Remote holds self's leases")
	}
	if b := p.Remote[peerA]; b == nil {
		t.Error("Remote: no batch for peer A")
	} else {
		wantBatch(t, "Remote[A]", *b, tokens, want, 0, 5)
	}
	if b := p.Remote[peerB]; b == nil {
		t.Error("Remote: no batch for peer B")
	} else {
		wantBatch(t, "Remote[B]", *b, tokens, want, 3)
	}

	wantErr := map[int]error{
		2:  errs.ErrTokenInvalid,
		4:  errs.ErrTokenWrongConsumer,
		6:  errs.ErrTokenWrongPrincipal,
		7:  errs.ErrTokenUnknownKey,
		9:  errs.ErrTokenInvalid,
		10: errs.ErrTokenInvalid,
		11: errs.ErrTokenWrongConsumer,
	}
	for i, o := range out {
		if w, ok := wantErr[i]; ok {
			if !errors.Is(o.Err, w) {
				t.Errorf("out[%d].Err = %v, want %v", i, o.Err, w)
			}
		} else if o.Err != sentinel {
			t.Errorf("out[%d].Err = %v; a token that opens leaves its outcome to whoever settles it", i, o.Err)
		}
	}
}

func TestPartitionAllLocal(t *testing.T) {
	keys := keyring(t, 'k')
	self := token.NewIssuerID()
	want := map[int]token.Claims{0: claims(self, 1), 1: claims(self, 2)}
	tokens := []string{
		keys.Seal(want[0], "S", "C", ""),
		keys.Seal(want[1], "S", "C", ""),
	}
	out := make([]settle.Outcome, len(tokens))
	p := settle.Partition(keys, self, tokens, "S", "C", "", out)
	wantBatch(t, "Local", p.Local, tokens, want, 0, 1)
	if len(p.Remote) != 0 {
		t.Errorf("Remote has %d issuers, want none", len(p.Remote))
	}
	for i, o := range out {
		if o.Err != nil {
			t.Errorf("out[%d].Err = %v", i, o.Err)
		}
	}
}

// A keyring with an old key below the signing one still opens the old
// key's tokens (rotation), and partitions them like any other.
func TestPartitionAcrossKeyRotation(t *testing.T) {
	oldKey, newKey := bytes.Repeat([]byte{'o'}, 32), bytes.Repeat([]byte{'n'}, 32)
	old, err := token.NewKeyring(oldKey)
	if err != nil {
		t.Fatal(err)
	}
	rotated, err := token.NewKeyring(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	self, peer := token.NewIssuerID(), token.NewIssuerID()
	want := map[int]token.Claims{0: claims(peer, 1), 1: claims(self, 2)}
	tokens := []string{old.Seal(want[0], "S", "C", "p"), rotated.Seal(want[1], "S", "C", "p")}
	out := make([]settle.Outcome, len(tokens))
	p := settle.Partition(rotated, self, tokens, "S", "C", "p", out)
	wantBatch(t, "Local", p.Local, tokens, want, 1)
	if b := p.Remote[peer]; b == nil {
		t.Fatal("Remote: no batch for the peer")
	} else {
		wantBatch(t, "Remote[peer]", *b, tokens, want, 0)
	}
	for i, o := range out {
		if o.Err != nil {
			t.Errorf("out[%d].Err = %v", i, o.Err)
		}
	}
}

// A lease's token and the one an Extend gave for it, in one request, are
// one delivery: Split settles it once, with the later token, and both get
// its outcome; a token repeated and another delivery are settled as ever.
func TestSplitSettlesADeliveryOnceWhateverItsTokens(t *testing.T) {
	const stream, consumer, principal = "ORDERS", "billing", "alice"
	keys := keyring(t, 'k')
	self, peer := token.NewIssuerID(), token.NewIssuerID()
	first := claims(self, 1)
	extended := first
	extended.Deadline = first.Deadline.Add(30 * time.Second)
	old := keys.Seal(first, stream, consumer, principal)
	renewed := keys.Seal(extended, stream, consumer, principal)
	other := keys.Seal(claims(self, 2), stream, consumer, principal)
	remoteOld := keys.Seal(claims(peer, 3), stream, consumer, principal)
	remoteNew := claims(peer, 3)
	remoteNew.Deadline = remoteNew.Deadline.Add(time.Second)
	remoteRenewed := keys.Seal(remoteNew, stream, consumer, principal)

	r := settle.Request{Stream: stream, Consumer: consumer, Principal: principal,
		Tokens: []string{old, other, renewed, old, remoteOld, remoteRenewed}}
	var seen sync.Map // issuer → the batch it was asked to settle
	out := settle.Split(keys, self, r, func(issuer token.IssuerID, b *settle.Batch) []settle.Outcome {
		seen.Store(issuer, b)
		o := make([]settle.Outcome, len(b.Claims))
		for j, c := range b.Claims {
			o[j].NewToken = fmt.Sprint(c.StreamSeq, "@", c.Deadline.UnixMilli())
		}
		return o
	})
	local, _ := seen.Load(self)
	if b := local.(*settle.Batch); len(b.Claims) != 2 || b.Tokens[0] != renewed || b.Tokens[1] != other {
		t.Errorf("self settles %d claims (tokens renewed %v, other %v); want the delivery once, by its later token, and the other",
			len(b.Claims), b.Tokens[0] == renewed, b.Tokens[len(b.Tokens)-1] == other)
	}
	remote, _ := seen.Load(peer)
	if b := remote.(*settle.Batch); len(b.Claims) != 1 || b.Tokens[0] != remoteRenewed {
		t.Errorf("the peer settles %d claims; want its delivery once, by its later token", len(b.Claims))
	}
	want := []string{
		fmt.Sprint(1, "@", extended.Deadline.UnixMilli()), fmt.Sprint(2, "@", claims(self, 2).Deadline.UnixMilli()),
		fmt.Sprint(1, "@", extended.Deadline.UnixMilli()), fmt.Sprint(1, "@", extended.Deadline.UnixMilli()),
		fmt.Sprint(3, "@", remoteNew.Deadline.UnixMilli()), fmt.Sprint(3, "@", remoteNew.Deadline.UnixMilli()),
	}
	for i, o := range out {
		if o.NewToken != want[i] {
			t.Errorf("token %d: outcome of %s; want %s's", i, o.NewToken, want[i])
		}
	}
}
