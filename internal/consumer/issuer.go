package consumer

import (
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

// claims are what the token of delivery d says.
func (is *issuer) claims(d *Delivery) token.Claims {
	return token.Claims{
		Issuer:      is.self,
		StreamSeq:   d.Meta.StreamSeq,
		ConsumerSeq: d.Meta.ConsumerSeq,
		Delivered:   d.Meta.Delivered,
		Deadline:    d.Deadline,
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
// principal, and records to whom they went (for Holders).
func (is *issuer) issue(ds []*Delivery, principal string) []*Delivery {
	if len(ds) == 0 {
		return ds
	}
	sealer := is.keys.Sealer(is.stream, is.name, principal)
	rs := make([]lease.Ref, len(ds))
	for i, d := range ds {
		d.Token = sealer.Seal(is.claims(d))
		rs[i] = lease.Ref{StreamSeq: d.Meta.StreamSeq, Delivered: d.Meta.Delivered, ConsumerSeq: d.Meta.ConsumerSeq}
	}
	is.leases.Hand(rs, principal, time.Now())
	return ds
}

// reissue seals a new token of cl for principal: an Extend's, with its new
// deadline, held by this replica from now on (an adopted lease too).
func (is *issuer) reissue(cl token.Claims, principal string) string {
	cl.Issuer = is.self
	return is.keys.Seal(cl, is.stream, is.name, principal)
}
