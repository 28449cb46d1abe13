package token

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Keyring holds the token keys: one signs, all verify. Replicas share it;
// it also authenticates the settles they forward to each other (Sign,
// Verify).
type Keyring struct {
	signing key
	byID    map[uint32]key
	random  bool // RandomKeyring's: its key dies with the process
}

type key struct {
	id   uint32
	macs *sync.Pool // of *macState keyed with the secret
}

// macState is an HMAC-SHA256 keyed with a secret and the scratch space of
// one token, pooled: sealing or opening a token allocates for neither.
type macState struct {
	h      hash.Hash
	token  [maxTokenBytes]byte
	sum    [sha256.Size + macLen/2]byte // room for macV2
	fields []byte                       // appendFields of a token's stream, consumer, principal
}

func newKey(secret []byte) key {
	sum := sha256.Sum256(append([]byte("jetgate key id\x00"), secret...))
	return key{
		id:   binary.BigEndian.Uint32(sum[:4]),
		macs: &sync.Pool{New: func() any { return &macState{h: hmac.New(sha256.New, secret)} }},
	}
}

// NewKeyring makes a keyring from secrets, the first of which signs; the
// others only verify. Each secret must be at least 32 bytes.
func NewKeyring(secrets ...[]byte) (*Keyring, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("no token key given")
	}
	return newKeyring(secrets[0], secrets[1:])
}

func newKeyring(signing []byte, verifyOnly [][]byte) (*Keyring, error) {
	kr := &Keyring{byID: make(map[uint32]key, 1+len(verifyOnly))}
	for i, s := range append([][]byte{signing}, verifyOnly...) {
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
	kr.random = true
	return kr
}

// VerifyOnly is the prefix of a key file line whose key only verifies.
const VerifyOnly = "verify-only:"

// LoadKeyring reads a key file: one secret per line. The first line without
// the VerifyOnly prefix signs; every line verifies. Blank lines and lines
// starting with # are skipped.
//
// A key is rotated in two steps, so that no replica ever meets a token it
// cannot verify: first every replica gets the new key as a verify-only line;
// then the new key is made the signing one (the first plain line) and the
// old one kept, verify-only, for one ack_wait before it is removed.
func LoadKeyring(path string) (*Keyring, error) { return LoadKeyringFiles(path) }

// LoadKeyringFiles reads several key files as one, in order, with the rules
// of LoadKeyring: the first plain key line of all of them signs, every key
// verifies, VerifyOnly lines only verify. So a file may hold only
// verify-only keys (the new key of a rotation, say) as long as another
// signs.
func LoadKeyringFiles(paths ...string) (*Keyring, error) {
	if len(paths) == 0 {
		return nil, errors.New("no token key file given")
	}
	var signing []byte
	var verify [][]byte
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read token key file: %w", err)
		}
		b = bytes.TrimPrefix(b, []byte("\ufeff")) // a BOM (PowerShell's UTF8, old Notepad) is no part of the first line
		n := 0
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			line := strings.TrimSpace(sc.Text())
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			n++
			secret, verifyOnly := strings.CutPrefix(line, VerifyOnly)
			secret = strings.TrimSpace(secret)
			if len(secret) < minKeyLen {
				return nil, fmt.Errorf("token key file %s: key %d is %d bytes; at least %d are needed", path, n, len(secret), minKeyLen)
			}
			if verifyOnly || signing != nil {
				verify = append(verify, []byte(secret))
			} else {
				signing = []byte(secret)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("read token key file %s: %w", path, err)
		}
		if n == 0 {
			return nil, fmt.Errorf("token key file %s: no token key given", path)
		}
	}
	if signing == nil {
		return nil, fmt.Errorf("token key files %s: every key is %s; one must sign", strings.Join(paths, ", "), strings.TrimSuffix(VerifyOnly, ":"))
	}
	return newKeyring(signing, verify)
}

// signDomain starts every MAC of Sign: token MACs start with the token
// version byte, so no MAC of one kind is ever a MAC of the other.
const signDomain = 0xF1

// Sign authenticates parts (a message between replicas) with the signing
// key. The result names the key, for Verify.
func (kr *Keyring) Sign(parts ...[]byte) string {
	var sum [macLen]byte
	mac := kr.signing.macOf(sum[:0], parts)
	return strconv.FormatUint(uint64(kr.signing.id), 16) + "." + base64.RawURLEncoding.EncodeToString(mac)
}

// Verify reports whether sig is Sign's result for parts under a key of the
// ring.
func (kr *Keyring) Verify(sig string, parts ...[]byte) bool {
	idText, macText, ok := strings.Cut(sig, ".")
	if !ok {
		return false
	}
	id, err := strconv.ParseUint(idText, 16, 32)
	if err != nil {
		return false
	}
	k, ok := kr.byID[uint32(id)]
	if !ok {
		return false
	}
	got, err := base64.RawURLEncoding.Strict().DecodeString(macText)
	if err != nil {
		return false
	}
	var sum [macLen]byte
	return hmac.Equal(got, k.macOf(sum[:0], parts))
}

func (k key) macOf(dst []byte, parts [][]byte) []byte {
	st := k.macs.Get().(*macState)
	defer k.macs.Put(st)
	m := st.h
	m.Reset()
	m.Write([]byte{signDomain})
	var n [binary.MaxVarintLen64]byte
	for _, p := range parts {
		m.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		m.Write(p)
	}
	var sum [sha256.Size]byte
	return append(dst, m.Sum(sum[:0])[:macLen]...)
}

// mac returns the MAC of a version 1 token: payload bound to fields
// (appendFields of the stream, consumer and principal), in st's scratch
// space.
func (st *macState) mac(payload, fields []byte) []byte {
	st.h.Reset()
	st.h.Write(payload)
	st.h.Write(fields)
	return st.h.Sum(st.sum[:0])[:macLen]
}

// macV2 returns the MAC of a version 2 token in st's scratch space: half
// authenticates payload alone, half binds it to fields, so that a token
// altered is told apart from one issued for another consumer or caller.
func (st *macState) macV2(payload, fields []byte) []byte {
	st.h.Reset()
	st.h.Write(payload)
	st.h.Sum(st.sum[:0])
	st.h.Reset()
	st.h.Write(payload)
	st.h.Write(fields)
	st.h.Sum(st.sum[macLen/2 : macLen/2])
	return st.sum[:macLen]
}

// appendFields appends each field with its length first, so that no two
// lists of fields give the same bytes.
func appendFields(b []byte, fields ...string) []byte {
	for _, f := range fields {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}
