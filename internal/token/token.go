// Package token is the lease token codec and its keyring. A token names a
// lease (issuer, stream and consumer sequence, delivery count, deadline) and
// is HMAC-signed, bound to the stream, consumer and principal it was issued
// for, so that it cannot be forged, altered or moved.
package token

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
)

// Token layout, before base64url (no padding):
//
//	version(1) keyID(4) issuer(8) consumerTag(4)
//	uvarint streamSeq, consumerSeq, delivered, deadline (unix ms)
//	mac(16)
//
// The MAC is HMAC-SHA256 over the bytes before it and over stream, consumer
// and principal, so a token cannot be altered, forged, or moved to another
// consumer or caller. The consumer tag only lets a token for another consumer
// be told apart from a forged one.
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

// Keyring holds the token keys: the first signs, all verify.
type Keyring struct {
	signing key
	byID    map[uint32]key
}

type key struct {
	id   uint32
	macs *sync.Pool // of HMAC-SHA256 hashes keyed with the secret
}

func newKey(secret []byte) key {
	sum := sha256.Sum256(append([]byte("jetgate key id\x00"), secret...))
	return key{
		id:   binary.BigEndian.Uint32(sum[:4]),
		macs: &sync.Pool{New: func() any { return hmac.New(sha256.New, secret) }},
	}
}

// NewKeyring makes a keyring from secrets, the first of which signs.
// Each secret must be at least 32 bytes.
func NewKeyring(secrets ...[]byte) (*Keyring, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("no token key given")
	}
	kr := &Keyring{byID: make(map[uint32]key, len(secrets))}
	for i, s := range secrets {
		if len(s) < minKeyLen {
			return nil, fmt.Errorf("token key %d is %d bytes; at least %d are needed", i+1, len(s), minKeyLen)
		}
		k := newKey(bytes.Clone(s))
		if i == 0 {
			kr.signing = k
		}
		kr.byID[k.id] = k
	}
	return kr, nil
}

// RandomKeyring makes a keyring with one random key. Tokens signed with it
// live and die with the process.
func RandomKeyring() *Keyring {
	s := make([]byte, minKeyLen)
	if _, err := rand.Read(s); err != nil {
		panic(err)
	}
	kr, _ := NewKeyring(s)
	return kr
}

// LoadKeyring reads a key file: one secret per line, the first signs and
// every line verifies (for rotation, put the new key first and keep the old
// one below it for one ack_wait). Blank lines and lines starting with # are
// skipped.
func LoadKeyring(path string) (*Keyring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read token key file: %w", err)
	}
	var secrets [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		secrets = append(secrets, []byte(line))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read token key file: %w", err)
	}
	kr, err := NewKeyring(secrets...)
	if err != nil {
		return nil, fmt.Errorf("token key file %s: %w", path, err)
	}
	return kr, nil
}

// consumerTag is a short digest of the consumer a token was issued for.
func consumerTag(stream, consumer string) [4]byte {
	var buf [2*binary.MaxVarintLen64 + 2*maxName]byte
	b := buf[:0]
	for _, f := range [...]string{stream, consumer} {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	sum := sha256.Sum256(b)
	return [4]byte(sum[:4])
}

// writeFields writes each field with its length first, so that no two lists
// of fields write the same bytes.
func writeFields(w io.Writer, fields ...string) {
	var n [binary.MaxVarintLen64]byte
	for _, f := range fields {
		w.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
		io.WriteString(w, f)
	}
}

// mac appends the MAC of payload, bound to stream, consumer and principal,
// to dst.
func (k key) mac(dst, payload []byte, stream, consumer, principal string) []byte {
	m := k.macs.Get().(hash.Hash)
	defer k.macs.Put(m)
	m.Reset()
	m.Write(payload)
	writeFields(m, stream, consumer, principal)
	var sum [sha256.Size]byte
	return append(dst, m.Sum(sum[:0])[:macLen]...)
}

// Seal returns the token for c, issued for stream/consumer and principal.
func (kr *Keyring) Seal(c Claims, stream, consumer, principal string) string {
	b := make([]byte, headerLen, maxTokenBytes)
	b[0] = tokenVersion
	binary.BigEndian.PutUint32(b[1:5], kr.signing.id)
	copy(b[5:13], c.Issuer[:])
	tag := consumerTag(stream, consumer)
	copy(b[13:17], tag[:])
	b = binary.AppendUvarint(b, c.StreamSeq)
	b = binary.AppendUvarint(b, c.ConsumerSeq)
	b = binary.AppendUvarint(b, c.Delivered)
	b = binary.AppendUvarint(b, uint64(c.Deadline.UnixMilli()))
	b = kr.signing.mac(b, b, stream, consumer, principal)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Open verifies tok for stream/consumer and principal and returns its claims.
// It fails with errs.ErrTokenInvalid or errs.ErrTokenWrongConsumer.
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
	var want [macLen]byte
	if !hmac.Equal(sum, k.mac(want[:0], payload, stream, consumer, principal)) {
		tag := consumerTag(stream, consumer)
		if subtle.ConstantTimeCompare(tag[:], payload[13:17]) == 0 {
			return c, errs.ErrTokenWrongConsumer
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
