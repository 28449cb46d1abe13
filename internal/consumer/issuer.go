package consumer

import (
	"cmp"
	"time"

	"github.com/jetgate/jetgate/internal/lease"
	"github.com/jetgate/jetgate/internal/token"
)

// issuer issues the tokens of a consumer's leases: it seals what each says
// (whose lease it is and of which delivery) and records in the lease table
// to whom it went.
type issuer struct {
	self         token.IssuerID // this replica
	keys         *token.Keyring
	stream, name string
	leases       *lease.Table
}

// claims are what the token of delivery d says: the deadline it was
// received with, which its tokens keep when its lease is cut short later
// (lease.Lease.TokenDeadline), not the one it is handed out with.
func (is *issuer) claims(d *Delivery) token.Claims {
	return token.Claims{
		Issuer:      is.self,
		StreamSeq:   d.Meta.StreamSeq,
		ConsumerSeq: d.Meta.ConsumerSeq,
		Delivered:   d.Meta.Delivered,
		Deadline:    cmp.Or(d.first, d.Deadline),
		Start:       d.start,
	}
}

// claimsOfLease are what a token of lease l says now (TokenDeadline).
func (is *issuer) claimsOfLease(l *lease.Lease) token.Claims {
	return token.Claims{
		Issuer:      is.self,
		StreamSeq:   l.StreamSeq,
		ConsumerSeq: l.ConsumerSeq,
		Delivered:   l.Delivered,
		Deadline:    l.TokenDeadline(),
	}
}

// issue seals the tokens of deliveries about to be handed out to
// principal; each sink dates them as they go (dated).
func (is *issuer) issue(ds []*Delivery, principal string) []*Delivery {
	if len(ds) == 0 {
		return ds
	}
	sealer := is.keys.Sealer(is.stream, is.name, principal)
	for _, d := range ds {
		d.Token = sealer.Seal(is.claims(d))
	}
	return ds
}

// dated gives deliveries about to go to principal the deadlines of their
// leases as the lease table has them now, and records to whom they went
// (for Holders). Call it as they go: a lease is re-dated (a shorter
// ack_wait) or cut (a reconnect, a new leader) while its delivery waits,
// kept for the next Fetch or behind a Consume stream's slow reader, and
// the deadline it was received with would outlast the server's redelivery.
func (is *issuer) dated(ds []*Delivery, principal string) []*Delivery {
	if len(ds) == 0 {
		return ds
	}
	rs := make([]lease.Ref, len(ds))
	for i, d := range ds {
		rs[i] = lease.Ref{StreamSeq: d.Meta.StreamSeq, Delivered: d.Meta.Delivered, ConsumerSeq: d.Meta.ConsumerSeq}
	}
	for i, dl := range is.leases.Hand(rs, principal, time.Now()) {
		if !dl.IsZero() {
			ds[i].Deadline = dl
		}
	}
	return ds
}

// reissue seals a new token of cl for principal: an Extend's, with its new
// deadline, held by this replica from now on (an adopted lease too).
func (is *issuer) reissue(cl token.Claims, principal string) string {
	cl.Issuer = is.self
	return is.keys.Seal(cl, is.stream, is.name, principal)
}
