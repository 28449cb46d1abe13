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
//	[version 3: uvarint unkept (unix ms)]
//	[version 4: uvarint deadline-start+1 (ms; 0: no start), unkept (unix ms; 0: none)]
//	mac(16)
//
// Version 4, the one sealed, is version 2 with two more fields: when the
// server's clock of the lease started (Claims.Start), and for a lease its
// issuer keeps alive, Claims.Unkept. Versions 2 and 3 (version 2 and
// unkept) are tokens of earlier releases, still opened; a replica of one of
// those refuses version 4 as invalid.
//
// In version 2 the MAC is two halves of HMAC-SHA256: one over the bytes
// before it, one over them and stream, consumer and principal, so a token
// cannot be altered, forged, or moved to another consumer or caller. The
// tags only let a token for another consumer, or of another caller, be told
// apart from a forged one; they are read only once the first half has
// verified them. Version 1 (one MAC over all of it, tags read when it
// fails) is still opened: tokens of replicas of an earlier release.
const (
	tokenV2       = 2
	tokenV1       = 1
	tokenKept     = 3
	tokenVersion  = 4
	macLen        = 16
	headerLen     = 1 + 4 + 8 + 4
	maxTokenBytes = headerLen + 6*binary.MaxVarintLen64 + macLen
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
	// Start is when the server's clock of the delivery last started: its
	// receipt, or the +WPI of the Extend that issued the token, cut to the
	// millisecond. A replica acting on the token alone dates the lease from
	// it by the consumer's timing now, and knows it from before a reset
	// noticed since. Zero: not said (a token of an earlier release).
	Start time.Time
	// Unkept is, for a lease its issuer keeps alive until Deadline (an
	// Extend with a duration), when it ends if the issuer stops keeping it
	// (the server's redelivery without the keep-alive): a replica acting on
	// the token alone trusts it only until then. Zero: Deadline.
	Unkept time.Time
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
	var since, unkept uint64
	if !c.Start.IsZero() {
		since = uint64(max(c.Deadline.UnixMilli()-c.Start.UnixMilli(), 0)) + 1
	}
	if !c.Unkept.IsZero() {
		unkept = uint64(c.Unkept.UnixMilli())
	}
	b = binary.AppendUvarint(b, since)
	b = binary.AppendUvarint(b, unkept)
	b = append(b, st.macV2(b, s.fields)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Open verifies tok for stream/consumer and principal and returns its claims.
// It fails with errs.ErrTokenInvalid, errs.ErrTokenUnknownKey,
// errs.ErrTokenWrongConsumer or errs.ErrTokenWrongPrincipal.
func (kr *Keyring) Open(tok, stream, consumer, principal string) (Claims, error) {
	var c Claims
	if len(tok) == 0 || len(tok) > MaxTokenLen {
		return c, errs.ErrTokenInvalid
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(tok)
	// Strict decoding still skips line breaks; only the canonical text of
	// the bytes is the token.
	if err != nil || len(b) < headerLen+4+macLen || b[0] < tokenV1 || b[0] > tokenVersion ||
		base64.RawURLEncoding.EncodedLen(len(b)) != len(tok) {
		return c, errs.ErrTokenInvalid
	}
	payload, sum := b[:len(b)-macLen], b[len(b)-macLen:]
	k, ok := kr.byID[binary.BigEndian.Uint32(payload[1:5])]
	if !ok {
		return c, kr.unknownKey()
	}
	if err := k.verify(payload, sum, stream, consumer, principal); err != nil {
		return c, err
	}
	copy(c.Issuer[:], payload[5:13])
	rest := payload[headerLen:]
	var fields [6]uint64
	n := [...]int{tokenV1: 4, tokenV2: 4, tokenKept: 5, tokenVersion: 6}[payload[0]]
	for i := range fields[:n] {
		v, k := binary.Uvarint(rest)
		if k <= 0 {
			return Claims{}, errs.ErrTokenInvalid
		}
		fields[i], rest = v, rest[k:]
	}
	if len(rest) != 0 || fields[3] > 1<<62 || fields[4] > 1<<62 || fields[5] > 1<<62 {
		return Claims{}, errs.ErrTokenInvalid
	}
	c.StreamSeq, c.ConsumerSeq, c.Delivered = fields[0], fields[1], fields[2]
	c.Deadline = time.UnixMilli(int64(fields[3]))
	unkept := fields[4] // version 3's fifth field
	if n == 6 {
		if since := fields[4]; since > 0 {
			c.Start = c.Deadline.Add(-time.Duration(since-1) * time.Millisecond)
		}
		unkept = fields[5]
	}
	if unkept > 0 {
		c.Unkept = time.UnixMilli(int64(unkept))
	}
	return c, nil
}

// verify checks a token's MAC, and once it fails says whether the token is
// another consumer's or caller's: in version 2 only if its first half
// shows the tags are the issuer's own.
func (k key) verify(payload, sum []byte, stream, consumer, principal string) error {
	st := k.macs.Get().(*macState)
	defer k.macs.Put(st)
	st.fields = appendFields(st.fields[:0], stream, consumer, principal)
	var want []byte
	if payload[0] == tokenV1 {
		want = st.mac(payload, st.fields)
	} else {
		want = st.macV2(payload, st.fields)
		if !hmac.Equal(sum[:macLen/2], want[:macLen/2]) {
			return errs.ErrTokenInvalid
		}
	}
	if hmac.Equal(sum, want) {
		return nil
	}
	tag := tags(stream, consumer, principal)
	switch {
	case subtle.ConstantTimeCompare(tag[:2], payload[13:15]) == 0:
		return errs.ErrTokenWrongConsumer
	case subtle.ConstantTimeCompare(tag[2:], payload[15:17]) == 0:
		return errs.ErrTokenWrongPrincipal
	}
	return errs.ErrTokenInvalid
}

// unknownKey is the error of a token whose key this keyring lacks, saying
// why when this gateway's key is its process's own.
func (kr *Keyring) unknownKey() error {
	if kr.random {
		return errUnknownRandomKey
	}
	return errUnknownKey
}

var (
	errUnknownKey = fmt.Errorf("%w: the token was signed with a token key this gateway does not hold: "+
		"every replica needs the same --token-key-file (a retired key stays as a verify-only line for one ack_wait)", errs.ErrTokenUnknownKey)
	errUnknownRandomKey = fmt.Errorf("%w: the token was signed with a token key this gateway does not hold: "+
		"this gateway's key lasts only as long as its process: give every replica the same --token-key-file", errs.ErrTokenUnknownKey)
)
