// Package token is the lease token codec and its keyring. A token names a
// lease (issuer, stream and consumer sequence, delivery count, deadline) and
// is HMAC-signed, bound to the stream, consumer and principal it was issued
// for, so that it cannot be forged, altered or moved.
package token

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
)

// Token layout, before base64url (no padding):
//
//	version(1) keyID(4) issuer(8) consumerTag(2) principalTag(2)
//	uvarint streamSeq, consumerSeq, delivered, deadline (unix ms)
//	mac(16)
//
// The MAC is HMAC-SHA256 over the bytes before it and over stream, consumer
// and principal, so a token cannot be altered, forged, or moved to another
// consumer or caller. The tags only let a token for another consumer, or of
// another caller, be told apart from a forged one; they are read only once
// the MAC has failed.
const (
	tokenVersion  = 1
	macLen        = 16
	headerLen     = 1 + 4 + 8 + 4
	maxTokenBytes = headerLen + 4*binary.MaxVarintLen64 + macLen
	// MaxTokenLen is the longest token text the gateway issues or accepts.
	MaxTokenLen = 256
	minKeyLen   = 32
	// maxName bounds stream and consumer names, as the NATS server does.
	maxName = 255
)

// IssuerID identifies one gateway process; tokens name their issuer by it.
type IssuerID [8]byte

// String returns the id in hex, as it appears in subjects and logs.
func (id IssuerID) String() string { return fmt.Sprintf("%x", id[:]) }

// NewIssuerID returns a random id.
func NewIssuerID() IssuerID {
	var id IssuerID
	if _, err := rand.Read(id[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return id
}

// Claims is what a token says about a lease.
type Claims struct {
	Issuer      IssuerID
	StreamSeq   uint64
	ConsumerSeq uint64
	Delivered   uint64
	Deadline    time.Time // cut to the millisecond
}

// tags are short digests of the consumer and of the principal a token was
// issued for.
func tags(stream, consumer, principal string) [4]byte {
	c, p := digest(stream, consumer), digest(principal)
	return [4]byte{c[0], c[1], p[0], p[1]}
}

func digest(fields ...string) [4]byte {
	var buf [2*binary.MaxVarintLen64 + 2*maxName]byte
	b := buf[:0]
	for _, f := range fields {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	sum := sha256.Sum256(b)
	return [4]byte(sum[:4])
}

// Seal returns the token for c, issued for stream/consumer and principal.
func (kr *Keyring) Seal(c Claims, stream, consumer, principal string) string {
	return kr.Sealer(stream, consumer, principal).Seal(c)
}

// Sealer seals tokens for one stream/consumer and principal: what is the
// same for each token of a Fetch is worked out once.
type Sealer struct {
	key    key
	tag    [4]byte
	fields []byte
}

// Sealer returns a Sealer for stream/consumer and principal.
func (kr *Keyring) Sealer(stream, consumer, principal string) Sealer {
	return Sealer{key: kr.signing, tag: tags(stream, consumer, principal), fields: appendFields(nil, stream, consumer, principal)}
}

// Seal returns the token for c.
func (s Sealer) Seal(c Claims) string {
	st := s.key.macs.Get().(*macState)
	defer s.key.macs.Put(st)
	b := st.token[:headerLen]
	b[0] = tokenVersion
	binary.BigEndian.PutUint32(b[1:5], s.key.id)
	copy(b[5:13], c.Issuer[:])
	copy(b[13:17], s.tag[:])
	b = binary.AppendUvarint(b, c.StreamSeq)
	b = binary.AppendUvarint(b, c.ConsumerSeq)
	b = binary.AppendUvarint(b, c.Delivered)
	b = binary.AppendUvarint(b, uint64(c.Deadline.UnixMilli()))
	b = append(b, st.mac(b, s.fields)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Open verifies tok for stream/consumer and principal and returns its claims.
// It fails with errs.ErrTokenInvalid, errs.ErrTokenWrongConsumer or
// errs.ErrTokenWrongPrincipal.
func (kr *Keyring) Open(tok, stream, consumer, principal string) (Claims, error) {
	var c Claims
	if len(tok) == 0 || len(tok) > MaxTokenLen {
		return c, errs.ErrTokenInvalid
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(tok)
	// Strict decoding still skips line breaks; only the canonical text of
	// the bytes is the token.
	if err != nil || len(b) < headerLen+4+macLen || b[0] != tokenVersion ||
		base64.RawURLEncoding.EncodedLen(len(b)) != len(tok) {
		return c, errs.ErrTokenInvalid
	}
	payload, sum := b[:len(b)-macLen], b[len(b)-macLen:]
	k, ok := kr.byID[binary.BigEndian.Uint32(payload[1:5])]
	if !ok {
		return c, errs.ErrTokenInvalid
	}
	st := k.macs.Get().(*macState)
	st.fields = appendFields(st.fields[:0], stream, consumer, principal)
	ok = hmac.Equal(sum, st.mac(payload, st.fields))
	k.macs.Put(st)
	if !ok {
		tag := tags(stream, consumer, principal)
		switch {
		case subtle.ConstantTimeCompare(tag[:2], payload[13:15]) == 0:
			return c, errs.ErrTokenWrongConsumer
		case subtle.ConstantTimeCompare(tag[2:], payload[15:17]) == 0:
			return c, errs.ErrTokenWrongPrincipal
		}
		return c, errs.ErrTokenInvalid
	}
	copy(c.Issuer[:], payload[5:13])
	rest := payload[headerLen:]
	var fields [4]uint64
	for i := range fields {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			return Claims{}, errs.ErrTokenInvalid
		}
		fields[i], rest = v, rest[n:]
	}
	if len(rest) != 0 || fields[3] > 1<<62 {
		return Claims{}, errs.ErrTokenInvalid
	}
	c.StreamSeq, c.ConsumerSeq, c.Delivered = fields[0], fields[1], fields[2]
	c.Deadline = time.UnixMilli(int64(fields[3]))
	return c, nil
}
