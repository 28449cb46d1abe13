package settle

import (
	"sync"

	"github.com/jetgate/jetgate/internal/token"
)

// Batch is the part of a settle whose leases one issuer holds: the opened
// claims, the tokens they came from, and their places in the request.
type Batch struct {
	Claims []token.Claims
	Tokens []string
	Index  []int
}

func (b *Batch) add(c token.Claims, tok string, i int) {
	b.Claims = append(b.Claims, c)
	b.Tokens = append(b.Tokens, tok)
	b.Index = append(b.Index, i)
}

// Parts is a settle request split by issuer.
type Parts struct {
	Local  Batch                     // leases self issued
	Remote map[token.IssuerID]*Batch // leases other replicas issued
}

// Partition opens each token for stream/consumer and principal and splits
// them into self's leases and each other issuer's. A token that does not
// open gets its error in out, at its index; out has one entry per token.
func Partition(keys *token.Keyring, self token.IssuerID, tokens []string, stream, consumer, principal string, out []Outcome) Parts {
	var p Parts
	for i, tok := range tokens {
		c, err := keys.Open(tok, stream, consumer, principal)
		switch {
		case err != nil:
			out[i].Err = err
		case c.Issuer == self:
			p.Local.add(c, tok, i)
		default:
			if p.Remote == nil {
				p.Remote = make(map[token.IssuerID]*Batch)
			}
			b := p.Remote[c.Issuer]
			if b == nil {
				b = &Batch{}
				p.Remote[c.Issuer] = b
			}
			b.add(c, tok, i)
		}
	}
	return p
}

// Dedupe returns the tokens without repeats, in first-seen order, and for
// each token of the request the index of its copy among them: a token given
// twice in one request is settled once, and every copy gets that outcome.
func Dedupe(tokens []string) (unique []string, at []int) {
	seen := make(map[string]int, len(tokens))
	at = make([]int, len(tokens))
	for i, tok := range tokens {
		j, ok := seen[tok]
		if !ok {
			j = len(unique)
			seen[tok] = j
			unique = append(unique, tok)
		}
		at[i] = j
	}
	return unique, at
}

// delivery is what names a delivery in a token's claims.
type delivery struct{ streamSeq, consumerSeq, delivered uint64 }

// merged is b with one claim per delivery, the one with the latest
// deadline: a request may hold a lease's token and the one an Extend gave
// for it, two strings for one lease, which settled apart would wait for
// each other. at maps each claim of b to its delivery's place in merged;
// nil when b names each delivery once (merged is b).
func (b *Batch) merged() (m *Batch, at []int) {
	if len(b.Claims) < 2 {
		return b, nil
	}
	seen := make(map[delivery]int, len(b.Claims))
	for _, c := range b.Claims {
		seen[delivery{c.StreamSeq, c.ConsumerSeq, c.Delivered}] = -1
	}
	if len(seen) == len(b.Claims) {
		return b, nil
	}
	m, at = &Batch{}, make([]int, len(b.Claims))
	for j, c := range b.Claims {
		d := delivery{c.StreamSeq, c.ConsumerSeq, c.Delivered}
		k := seen[d]
		switch {
		case k < 0:
			k = len(m.Claims)
			seen[d] = k
			m.add(c, b.Tokens[j], b.Index[j])
		case c.Deadline.After(m.Claims[k].Deadline):
			m.Claims[k], m.Tokens[k] = c, b.Tokens[j]
		}
		at[j] = k
	}
	return m, at
}

// Split settles r's tokens by issuer: each token once however often it is
// given, opened for r's stream, consumer and principal (one that does not
// open gets its error), each delivery once however many of its tokens are
// given (merged), and each issuer's batch handed to settle, which returns
// the batch's outcomes in order. Other issuers' batches are settled at
// once, each on its own goroutine; self's on the caller's. Split returns
// one outcome per token of r, in order.
func Split(keys *token.Keyring, self token.IssuerID, r Request, settle func(issuer token.IssuerID, b *Batch) []Outcome) []Outcome {
	tokens, at := Dedupe(r.Tokens)
	uout := make([]Outcome, len(tokens))
	parts := Partition(keys, self, tokens, r.Stream, r.Consumer, r.Principal, uout)
	run := func(issuer token.IssuerID, b *Batch) {
		m, at := b.merged()
		outs := settle(issuer, m)
		for j, i := range b.Index {
			k := j
			if at != nil {
				k = at[j]
			}
			uout[i] = outs[k]
		}
	}
	var wg sync.WaitGroup
	for issuer, b := range parts.Remote {
		wg.Go(func() { run(issuer, b) })
	}
	if len(parts.Local.Claims) > 0 {
		run(self, &parts.Local)
	}
	wg.Wait()
	out := make([]Outcome, len(r.Tokens))
	for i, j := range at {
		out[i] = uout[j]
	}
	return out
}
