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

// Split settles r's tokens by issuer: each token once however often it is
// given, opened for r's stream, consumer and principal (one that does not
// open gets its error), and each issuer's batch handed to settle, which
// returns the batch's outcomes in order. Other issuers' batches are settled
// at once, each on its own goroutine; self's on the caller's. Split returns
// one outcome per token of r, in order.
func Split(keys *token.Keyring, self token.IssuerID, r Request, settle func(issuer token.IssuerID, b *Batch) []Outcome) []Outcome {
	tokens, at := Dedupe(r.Tokens)
	uout := make([]Outcome, len(tokens))
	parts := Partition(keys, self, tokens, r.Stream, r.Consumer, r.Principal, uout)
	var wg sync.WaitGroup
	for issuer, b := range parts.Remote {
		wg.Go(func() {
			for j, o := range settle(issuer, b) {
				uout[b.Index[j]] = o
			}
		})
	}
	if len(parts.Local.Claims) > 0 {
		for j, o := range settle(self, &parts.Local) {
			uout[parts.Local.Index[j]] = o
		}
	}
	wg.Wait()
	out := make([]Outcome, len(r.Tokens))
	for i, j := range at {
		out[i] = uout[j]
	}
	return out
}
