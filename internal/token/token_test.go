package token

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jetgate/jetgate/internal/errs"
)

const (
	tokStream    = "ORDERS"
	tokConsumer  = "billing"
	tokPrincipal = "alice"
)

var (
	keyA = []byte("0123456789abcdef0123456789abcdef")  // 32 bytes
	keyB = []byte("fedcba9876543210fedcba9876543210!") // 33 bytes
	keyC = []byte("a third key, also long enough to sign tokens")

	urlSafe = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

func mustKeyring(t testing.TB, secrets ...[]byte) *Keyring {
	t.Helper()
	kr, err := NewKeyring(secrets...)
	if err != nil {
		t.Fatalf("NewKeyring: %v", err)
	}
	return kr
}

func testClaims() Claims {
	return Claims{
		Issuer:      IssuerID{1, 2, 3, 4, 5, 6, 7, 8},
		StreamSeq:   1042,
		ConsumerSeq: 77,
		Delivered:   3,
		Deadline:    time.Date(2025, 3, 14, 15, 9, 26, 535_897_932, time.UTC),
	}
}

// sameClaims compares claims, the deadline as an instant.
func sameClaims(a, b Claims) bool {
	return a.Issuer == b.Issuer && a.StreamSeq == b.StreamSeq && a.ConsumerSeq == b.ConsumerSeq &&
		a.Delivered == b.Delivered && a.Deadline.Equal(b.Deadline) && a.Unkept.Equal(b.Unkept)
}

func isTokenError(err error) bool {
	return errors.Is(err, errs.ErrTokenInvalid) || errors.Is(err, errs.ErrTokenUnknownKey) ||
		errors.Is(err, errs.ErrTokenWrongConsumer) || errors.Is(err, errs.ErrTokenWrongPrincipal)
}

func TestTokenRoundTrip(t *testing.T) {
	kr := mustKeyring(t, keyA)
	tests := []struct {
		name      string
		c         Claims
		principal string
	}{
		{"typical", testClaims(), tokPrincipal},
		{"no principal", testClaims(), ""},
		{"zero sequences", Claims{Deadline: time.UnixMilli(1)}, ""},
		{"max fields", Claims{
			Issuer:      IssuerID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
			StreamSeq:   math.MaxUint64,
			ConsumerSeq: math.MaxUint64,
			Delivered:   math.MaxUint64,
			Deadline:    time.UnixMilli(1 << 62),
		}, strings.Repeat("p", 1000)},
		{"kept alive", Claims{Deadline: time.UnixMilli(1_800_000_000_000), Unkept: time.UnixMilli(1_799_999_970_000)}, tokPrincipal},
		{"started", Claims{Deadline: time.UnixMilli(1_800_000_000_000), Start: time.UnixMilli(1_799_999_971_500)}, tokPrincipal},
		{"started as it ends", Claims{Deadline: time.UnixMilli(1_800_000_000_000), Start: time.UnixMilli(1_800_000_000_000)}, tokPrincipal},
		{"started and kept alive", Claims{Deadline: time.UnixMilli(1_800_000_600_000), Start: time.UnixMilli(1_799_999_971_500), Unkept: time.UnixMilli(1_800_000_000_000)}, tokPrincipal},
		{"kept alive, max fields", Claims{
			Issuer:      IssuerID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
			StreamSeq:   math.MaxUint64,
			ConsumerSeq: math.MaxUint64,
			Delivered:   math.MaxUint64,
			Deadline:    time.UnixMilli(1 << 62),
			Start:       time.UnixMilli(1),
			Unkept:      time.UnixMilli(1 << 62),
		}, strings.Repeat("p", 1000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok := kr.Seal(tt.c, tokStream, tokConsumer, tt.principal)
			got, err := kr.Open(tok, tokStream, tokConsumer, tt.principal)
			if err != nil {
				t.Fatalf("open(seal(c)) = %v", err)
			}
			want := tt.c
			want.Deadline = tt.c.Deadline.Truncate(time.Millisecond)
			if !sameClaims(got, want) {
				t.Fatalf("open(seal(c)) = %+v, want %+v", got, want)
			}
			if got.Deadline.Nanosecond()%int(time.Millisecond) != 0 {
				t.Errorf("deadline %v is not cut to the millisecond", got.Deadline)
			}
		})
	}
}

func TestTokenIsURLSafeAndBounded(t *testing.T) {
	kr := mustKeyring(t, keyA)
	for _, c := range []Claims{
		testClaims(),
		{},
		{
			Issuer:      IssuerID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
			StreamSeq:   math.MaxUint64,
			ConsumerSeq: math.MaxUint64,
			Delivered:   math.MaxUint64,
			Deadline:    time.UnixMilli(math.MaxInt64), // the longest deadline varint
		},
	} {
		tok := kr.Seal(c, strings.Repeat("s", maxName), strings.Repeat("c", maxName), strings.Repeat("p", 4096))
		if !urlSafe.MatchString(tok) {
			t.Errorf("token %q has characters outside [A-Za-z0-9_-]", tok)
		}
		if len(tok) > MaxTokenLen {
			t.Errorf("token is %d characters, more than MaxTokenLen %d", len(tok), MaxTokenLen)
		}
	}
}

// sealedTokens are genuine tokens whose decoded lengths cover every
// remainder mod 3, so every base64 tail shape is exercised.
func sealedTokens(t testing.TB, kr *Keyring) []string {
	t.Helper()
	var toks []string
	seen := map[int]bool{}
	for _, seq := range []uint64{1, 200, 40_000, 3_000_000, 1 << 40, math.MaxUint64} {
		c := testClaims()
		c.StreamSeq = seq
		tok := kr.Seal(c, tokStream, tokConsumer, tokPrincipal)
		n := base64.RawURLEncoding.DecodedLen(len(tok))
		if !seen[n%3] {
			seen[n%3] = true
			toks = append(toks, tok)
		}
	}
	if len(seen) != 3 {
		t.Fatalf("sealed tokens cover decoded lengths mod 3 %v, want all of 0, 1, 2", seen)
	}
	return toks
}

func TestTokenEveryByteAlterationFails(t *testing.T) {
	kr := mustKeyring(t, keyA)
	for _, tok := range sealedTokens(t, kr) {
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		if err != nil {
			t.Fatal(err)
		}
		for i := range raw {
			for _, mask := range []byte{0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0xff} {
				b := bytes.Clone(raw)
				b[i] ^= mask
				alt := base64.RawURLEncoding.EncodeToString(b)
				c, err := kr.Open(alt, tokStream, tokConsumer, tokPrincipal)
				if !isTokenError(err) {
					t.Fatalf("byte %d ^ %#x: open = %+v, %v; want errs.ErrTokenInvalid or errs.ErrTokenWrongConsumer", i, mask, c, err)
				}
			}
		}
	}
}

// A token with every field (a kept lease's, with its start) is as
// tamper-proof as any: every byte altered fails, and so does relabelling it
// a version with fewer fields.
func TestKeptTokenEveryByteAlterationFails(t *testing.T) {
	kr := mustKeyring(t, keyA)
	c := testClaims()
	c.Unkept = c.Deadline.Add(-time.Minute)
	c.Start = c.Unkept.Add(-28 * time.Second)
	raw, err := base64.RawURLEncoding.DecodeString(kr.Seal(c, tokStream, tokConsumer, tokPrincipal))
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		b := bytes.Clone(raw)
		b[i] ^= 0x01
		if got, err := kr.Open(base64.RawURLEncoding.EncodeToString(b), tokStream, tokConsumer, tokPrincipal); !isTokenError(err) {
			t.Fatalf("byte %d altered: open = %+v, %v; want a token error", i, got, err)
		}
	}
	for _, v := range []byte{tokenV2, tokenKept} { // fields left over
		b := bytes.Clone(raw)
		b[0] = v
		if _, err := kr.Open(base64.RawURLEncoding.EncodeToString(b), tokStream, tokConsumer, tokPrincipal); !isTokenError(err) {
			t.Fatalf("a token relabelled version %d opened: %v", v, err)
		}
	}
}

func TestTokenEveryTruncationFails(t *testing.T) {
	kr := mustKeyring(t, keyA)
	for _, tok := range sealedTokens(t, kr) {
		for i := 0; i < len(tok); i++ {
			if _, err := kr.Open(tok[:i], tokStream, tokConsumer, tokPrincipal); !isTokenError(err) {
				t.Errorf("text cut to %d of %d characters: open = %v, want a token error", i, len(tok), err)
			}
		}
		raw, _ := base64.RawURLEncoding.DecodeString(tok)
		for i := 0; i < len(raw); i++ {
			cut := base64.RawURLEncoding.EncodeToString(raw[:i])
			if _, err := kr.Open(cut, tokStream, tokConsumer, tokPrincipal); !isTokenError(err) {
				t.Errorf("bytes cut to %d of %d: open = %v, want a token error", i, len(raw), err)
			}
		}
		for _, ext := range [][]byte{{0}, {1}, {0x80, 0}} {
			long := base64.RawURLEncoding.EncodeToString(append(bytes.Clone(raw), ext...))
			if _, err := kr.Open(long, tokStream, tokConsumer, tokPrincipal); !isTokenError(err) {
				t.Errorf("bytes %x appended: open = %v, want a token error", ext, err)
			}
		}
	}
}

// TestTokenTextIsCanonical checks that a token's text, not only its bytes,
// cannot be altered: the only text that opens is the one the gateway issued.
func TestTokenTextIsCanonical(t *testing.T) {
	kr := mustKeyring(t, keyA)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var substituted, withBreaks []string
	for _, tok := range sealedTokens(t, kr) {
		for i := range tok {
			for _, r := range alphabet {
				if byte(r) == tok[i] {
					continue
				}
				alt := tok[:i] + string(r) + tok[i+1:]
				if _, err := kr.Open(alt, tokStream, tokConsumer, tokPrincipal); err == nil {
					substituted = append(substituted, alt)
				}
			}
		}
		for _, ins := range []string{"\n", "\r", "\r\n"} {
			for _, alt := range []string{ins + tok, tok[:10] + ins + tok[10:], tok + ins} {
				if _, err := kr.Open(alt, tokStream, tokConsumer, tokPrincipal); err == nil {
					withBreaks = append(withBreaks, alt)
				}
			}
		}
	}
	if len(substituted)+len(withBreaks) > 0 {
		t.Fatalf("altered texts of a genuine token open: "+
			"%d with another last character (unused trailing bits, e.g. %q) and %d with line breaks inserted (e.g. %q)",
			len(substituted), first(substituted), len(withBreaks), first(withBreaks))
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

func TestTokenBoundToConsumerAndPrincipal(t *testing.T) {
	kr := mustKeyring(t, keyA)
	tok := kr.Seal(testClaims(), tokStream, tokConsumer, tokPrincipal)
	tests := []struct {
		name                        string
		stream, consumer, principal string
		want                        error
	}{
		{"other stream", "PAYMENTS", tokConsumer, tokPrincipal, errs.ErrTokenWrongConsumer},
		{"other consumer", tokStream, "audit", tokPrincipal, errs.ErrTokenWrongConsumer},
		{"both swapped", tokConsumer, tokStream, tokPrincipal, errs.ErrTokenWrongConsumer},
		{"names run together", tokStream + tokConsumer, "", tokPrincipal, errs.ErrTokenWrongConsumer},
		{"other principal", tokStream, tokConsumer, "mallory", errs.ErrTokenWrongPrincipal},
		{"no principal", tokStream, tokConsumer, "", errs.ErrTokenWrongPrincipal},
		{"principal prefix", tokStream, tokConsumer, tokPrincipal[:4], errs.ErrTokenWrongPrincipal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := kr.Open(tok, tt.stream, tt.consumer, tt.principal)
			if !errors.Is(err, tt.want) {
				t.Fatalf("open = %+v, %v; want %v", c, err, tt.want)
			}
			if c != (Claims{}) {
				t.Errorf("failed open returned claims %+v", c)
			}
		})
	}
}

// TestTokenFieldsCannotShift checks that the MAC tells the stream, consumer
// and principal apart even when a name holds a NUL byte, which validateNames
// accepts.
func TestTokenFieldsCannotShift(t *testing.T) {
	kr := mustKeyring(t, keyA)
	tests := []struct {
		name           string
		sealed, opened [3]string // stream, consumer, principal
	}{
		{"consumer into principal", [3]string{"S", "c\x00x", "p"}, [3]string{"S", "c", "x\x00p"}},
		{"stream into consumer", [3]string{"a\x00b", "c", ""}, [3]string{"a", "b\x00c", ""}},
	}
	var shifted []string
	for _, tt := range tests {
		tok := kr.Seal(testClaims(), tt.sealed[0], tt.sealed[1], tt.sealed[2])
		if _, err := kr.Open(tok, tt.opened[0], tt.opened[1], tt.opened[2]); err == nil {
			shifted = append(shifted, tt.name)
		}
	}
	if len(shifted) > 0 {
		t.Fatalf("a token opens for other names, its fields shifted (%s)",
			strings.Join(shifted, ", "))
	}
}

func TestTokenUnknownKeyFails(t *testing.T) {
	verifier := mustKeyring(t, keyA)
	for _, signer := range []*Keyring{mustKeyring(t, keyB), mustKeyring(t, keyC, keyA), RandomKeyring()} {
		tok := signer.Seal(testClaims(), tokStream, tokConsumer, tokPrincipal)
		_, err := verifier.Open(tok, tokStream, tokConsumer, tokPrincipal)
		if !errors.Is(err, errs.ErrTokenUnknownKey) || !strings.Contains(err.Error(), "--token-key-file") {
			t.Errorf("token signed with an unknown key: open = %v, want errs.ErrTokenUnknownKey naming --token-key-file", err)
		}
		if strings.Contains(err.Error(), "its process") {
			t.Errorf("a keyring from a file says its key is the process's: %v", err)
		}
	}
	if a, b := RandomKeyring(), RandomKeyring(); a.signing.id == b.signing.id {
		t.Errorf("two random keyrings share key id %x", a.signing.id)
	}
}

// A gateway on a random key says why a token of its earlier self fails.
func TestTokenUnknownKeyOfARandomKeySaysWhy(t *testing.T) {
	before, after := RandomKeyring(), RandomKeyring()
	tok := before.Seal(testClaims(), tokStream, tokConsumer, tokPrincipal)
	_, err := after.Open(tok, tokStream, tokConsumer, tokPrincipal)
	const why = "this gateway's key lasts only as long as its process: give every replica the same --token-key-file"
	if !errors.Is(err, errs.ErrTokenUnknownKey) || !strings.Contains(err.Error(), why) {
		t.Fatalf("open = %v; want errs.ErrTokenUnknownKey saying %q", err, why)
	}
}

// One altered byte anywhere (the tags included) is an altered token, never
// another consumer's or caller's: the MAC is checked before the tags are
// read. Only the key id's bytes name another key.
func TestTokenAlteredIsInvalidNeverAnothers(t *testing.T) {
	kr := mustKeyring(t, keyA)
	tok := kr.Seal(testClaims(), tokStream, tokConsumer, tokPrincipal)
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatal(err)
	}
	for i := range raw {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			b := bytes.Clone(raw)
			b[i] ^= mask
			_, err := kr.Open(base64.RawURLEncoding.EncodeToString(b), tokStream, tokConsumer, tokPrincipal)
			want := errs.ErrTokenInvalid
			if i >= 1 && i < 5 {
				want = errs.ErrTokenUnknownKey
			}
			if !errors.Is(err, want) {
				t.Fatalf("byte %d ^ %#x: open = %v, want %v", i, mask, err, want)
			}
		}
	}
}

func TestTokenKeyRotation(t *testing.T) {
	old := mustKeyring(t, keyA)
	rotated := mustKeyring(t, keyB, keyA)
	newOnly := mustKeyring(t, keyB)
	c := testClaims()

	oldTok := old.Seal(c, tokStream, tokConsumer, tokPrincipal)
	if got, err := rotated.Open(oldTok, tokStream, tokConsumer, tokPrincipal); err != nil || !sameClaims(got, c.withDeadlineMs()) {
		t.Errorf("[new, old] opening a token of [old] = %+v, %v; want the claims", got, err)
	}

	newTok := rotated.Seal(c, tokStream, tokConsumer, tokPrincipal)
	if newTok == oldTok {
		t.Fatal("[new, old] sealed with the old key")
	}
	if want := newOnly.Seal(c, tokStream, tokConsumer, tokPrincipal); newTok != want {
		t.Errorf("[new, old] sealed %q, want the new key's %q", newTok, want)
	}
	if _, err := newOnly.Open(newTok, tokStream, tokConsumer, tokPrincipal); err != nil {
		t.Errorf("[new] opening a token of [new, old] = %v", err)
	}
	if _, err := old.Open(newTok, tokStream, tokConsumer, tokPrincipal); !errors.Is(err, errs.ErrTokenUnknownKey) {
		t.Errorf("[old] opening a token of [new, old] = %v, want errs.ErrTokenUnknownKey", err)
	}
	if _, err := newOnly.Open(oldTok, tokStream, tokConsumer, tokPrincipal); !errors.Is(err, errs.ErrTokenUnknownKey) {
		t.Errorf("[new] opening a token of [old] after the old key was retired = %v, want errs.ErrTokenUnknownKey", err)
	}
}

func (c Claims) withDeadlineMs() Claims {
	c.Deadline = c.Deadline.Truncate(time.Millisecond)
	return c
}

func TestNewKeyring(t *testing.T) {
	tests := []struct {
		name    string
		secrets [][]byte
		wantErr bool
	}{
		{"no keys", nil, true},
		{"empty key", [][]byte{{}}, true},
		{"31 bytes", [][]byte{bytes.Repeat([]byte{'k'}, 31)}, true},
		{"32 bytes", [][]byte{bytes.Repeat([]byte{'k'}, 32)}, false},
		{"short second key", [][]byte{keyA, bytes.Repeat([]byte{'k'}, 31)}, true},
		{"two keys", [][]byte{keyA, keyB}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kr, err := NewKeyring(tt.secrets...)
			if (err != nil) != tt.wantErr {
				t.Fatalf("NewKeyring = %v, %v; want error %t", kr, err, tt.wantErr)
			}
			if err != nil && kr != nil {
				t.Errorf("NewKeyring returned a keyring with error %v", err)
			}
		})
	}
}

func TestNewKeyringCopiesSecrets(t *testing.T) {
	s := bytes.Clone(keyA)
	kr := mustKeyring(t, s)
	tok := kr.Seal(testClaims(), tokStream, tokConsumer, "")
	s[0] ^= 0xff
	if _, err := kr.Open(tok, tokStream, tokConsumer, ""); err != nil {
		t.Errorf("changing the caller's secret changed the keyring: %v", err)
	}
}

func writeKeyFile(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keys")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadKeyring(t *testing.T) {
	c := testClaims()
	ka, kb := string(keyA), string(keyB)
	tests := []struct {
		name string
		text string
		// signs and verifies are the keys the loaded keyring must sign with
		// and accept.
		signs    string
		verifies []string
	}{
		{"one key", ka + "\n", ka, []string{ka}},
		{"no final newline", ka, ka, []string{ka}},
		{"comments and blanks", "# jetgate keys\n\n   \n" + ka + "\n# old:\n\n" + kb + "\n", ka, []string{ka, kb}},
		{"indented comment", "  # not a key\n" + kb + "\n", kb, []string{kb}},
		{"spaces trimmed", "  " + ka + "\t\n", ka, []string{ka}},
		{"CRLF", ka + "\r\n" + kb + "\r\n", ka, []string{ka, kb}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kr, err := LoadKeyring(writeKeyFile(t, tt.text))
			if err != nil {
				t.Fatalf("LoadKeyring: %v", err)
			}
			want := mustKeyring(t, []byte(tt.signs)).Seal(c, tokStream, tokConsumer, "")
			if got := kr.Seal(c, tokStream, tokConsumer, ""); got != want {
				t.Errorf("loaded keyring does not sign with %q", tt.signs)
			}
			for _, k := range tt.verifies {
				tok := mustKeyring(t, []byte(k)).Seal(c, tokStream, tokConsumer, "")
				if _, err := kr.Open(tok, tokStream, tokConsumer, ""); err != nil {
					t.Errorf("loaded keyring rejects a token of %q: %v", k, err)
				}
			}
			if len(kr.byID) != len(tt.verifies) {
				t.Errorf("loaded %d keys, want %d", len(kr.byID), len(tt.verifies))
			}
		})
	}
}

func TestLoadKeyringErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent")
	if _, err := LoadKeyring(missing); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadKeyring(missing file) = %v, want fs.ErrNotExist", err)
	}
	for _, text := range []string{"", "# only a comment\n\n", string(keyA) + "\nshort\n"} {
		path := writeKeyFile(t, text)
		_, err := LoadKeyring(path)
		if err == nil {
			t.Errorf("LoadKeyring(%q) succeeded", text)
			continue
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("LoadKeyring(%q) = %v; the error does not name the file", text, err)
		}
	}
	path := writeKeyFile(t, "short\n")
	if _, err := LoadKeyring(path); err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "short") {
		t.Errorf("LoadKeyring(short key) = %v; want an error naming the file and not showing the key", err)
	}
}

func TestGatewayIDString(t *testing.T) {
	id := IssuerID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	if got := id.String(); got != "0123456789abcdef" {
		t.Errorf("String() = %q", got)
	}
	if a, b := NewIssuerID(), NewIssuerID(); a == b {
		t.Error("two NewIssuerID calls returned the same id")
	}
}

// sealAs seals c as a replica sealing version v did: this release's Seal
// for version 4, the layouts of earlier releases for 1, 2 and 3.
func sealAs(kr *Keyring, v byte, c Claims, stream, consumer, principal string) string {
	if v == tokenVersion {
		return kr.Seal(c, stream, consumer, principal)
	}
	k := kr.signing
	st := k.macs.Get().(*macState)
	defer k.macs.Put(st)
	b := make([]byte, headerLen, maxTokenBytes)
	b[0] = v
	binary.BigEndian.PutUint32(b[1:5], k.id)
	copy(b[5:13], c.Issuer[:])
	tag := tags(stream, consumer, principal)
	copy(b[13:17], tag[:])
	for _, f := range []uint64{c.StreamSeq, c.ConsumerSeq, c.Delivered, uint64(c.Deadline.UnixMilli())} {
		b = binary.AppendUvarint(b, f)
	}
	if v == tokenKept {
		b = binary.AppendUvarint(b, uint64(c.Unkept.UnixMilli()))
	}
	fields := appendFields(nil, stream, consumer, principal)
	if v == tokenV1 {
		b = append(b, st.mac(b, fields)...)
	} else {
		b = append(b, st.macV2(b, fields)...)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// Tokens of earlier releases, sealed as those releases sealed them, open to
// the claims they were sealed with.
func TestTokensOfEarlierReleasesOpen(t *testing.T) {
	kr := mustKeyring(t, keyA)
	c := testClaims()
	c.Deadline = c.Deadline.Truncate(time.Millisecond) // as tokens carry it
	kept := c
	kept.Unkept = c.Deadline.Add(-time.Minute)
	for _, tt := range []struct {
		v byte
		c Claims
	}{{tokenV1, c}, {tokenV2, c}, {tokenKept, kept}} {
		tok := sealAs(kr, tt.v, tt.c, tokStream, tokConsumer, tokPrincipal)
		got, err := kr.Open(tok, tokStream, tokConsumer, tokPrincipal)
		if err != nil || !sameClaims(got, tt.c) {
			t.Fatalf("version %d: open = %+v, %v; want %+v", tt.v, got, err, tt.c)
		}
	}
}

// FuzzOpenToken checks that open never panics and that the only text it
// accepts is a token a keyring would issue: anything that opens re-seals,
// in its own version (this release's, or an earlier one's), to the
// identical string.
func FuzzOpenToken(f *testing.F) {
	kr := mustKeyring(f, keyA)
	for _, tok := range sealedTokens(f, kr) {
		f.Add(tok)
		f.Add(tok[:len(tok)-1])
		f.Add(tok + "A")
	}
	f.Add(kr.Seal(Claims{}, tokStream, tokConsumer, tokPrincipal))
	for _, v := range []byte{tokenV1, tokenV2, tokenKept} { // tokens of earlier releases
		c := testClaims()
		c.Unkept = c.Deadline.Add(-time.Minute)
		if v != tokenKept {
			c.Unkept = time.Time{}
		}
		f.Add(sealAs(kr, v, c, tokStream, tokConsumer, tokPrincipal))
	}
	f.Add(mustKeyring(f, keyB).Seal(testClaims(), tokStream, tokConsumer, tokPrincipal))
	f.Add(kr.Seal(testClaims(), "PAYMENTS", tokConsumer, tokPrincipal))
	for _, junk := range []string{"", "A", "AQ", "AAAA", "!!!!", "====", "\n", strings.Repeat("A", MaxTokenLen), strings.Repeat("_", MaxTokenLen+1)} {
		f.Add(junk)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		c, err := kr.Open(tok, tokStream, tokConsumer, tokPrincipal)
		if err != nil {
			if !isTokenError(err) {
				t.Fatalf("open = %v, want errs.ErrTokenInvalid or errs.ErrTokenWrongConsumer", err)
			}
			if c != (Claims{}) {
				t.Fatalf("failed open returned claims %+v", c)
			}
			return
		}
		raw, _ := base64.RawURLEncoding.DecodeString(tok)
		if again := sealAs(kr, raw[0], c, tokStream, tokConsumer, tokPrincipal); again != tok {
			t.Fatalf("open accepted %q, which re-seals to %q", tok, again)
		}
		// The same genuine token never opens for another consumer or caller.
		if _, err := kr.Open(tok, tokStream, "audit", tokPrincipal); !errors.Is(err, errs.ErrTokenWrongConsumer) {
			t.Fatalf("open for another consumer = %v", err)
		}
		if _, err := kr.Open(tok, tokStream, tokConsumer, "mallory"); !errors.Is(err, errs.ErrTokenWrongPrincipal) {
			t.Fatalf("open for another principal = %v", err)
		}
	})
}

// FuzzForge checks that a token sealed with a key the verifier does not hold
// never opens, whatever it claims, and that tokens sealed with the
// verifier's own key round-trip.
func FuzzForge(f *testing.F) {
	verifier := mustKeyring(f, keyA, keyB)
	f.Add(keyC, uint64(1), uint64(1), uint64(1), int64(1_700_000_000_000), tokStream, tokConsumer, tokPrincipal)
	f.Add([]byte("short"), uint64(0), uint64(0), uint64(0), int64(0), "", "", "")
	f.Add(append(bytes.Clone(keyA), 0), uint64(math.MaxUint64), uint64(math.MaxUint64), uint64(math.MaxUint64), int64(math.MaxInt64), "S", "C", "")
	f.Add(keyA[:31], uint64(5), uint64(6), uint64(7), int64(-1), "a\x00b", "c", "p")
	f.Fuzz(func(t *testing.T, secret []byte, sseq, cseq, delivered uint64, deadlineMs int64, stream, consumer, principal string) {
		if len(secret) < minKeyLen {
			secret = append(bytes.Clone(secret), make([]byte, minKeyLen-len(secret))...)
		}
		c := Claims{
			Issuer:      IssuerID{9},
			StreamSeq:   sseq,
			ConsumerSeq: cseq,
			Delivered:   delivered,
			Deadline:    time.UnixMilli(deadlineMs),
		}

		genuine := verifier.Seal(c, stream, consumer, principal)
		if len(genuine) > MaxTokenLen || !urlSafe.MatchString(genuine) {
			t.Fatalf("sealed %q: longer than %d or not URL-safe", genuine, MaxTokenLen)
		}
		got, err := verifier.Open(genuine, stream, consumer, principal)
		switch {
		case deadlineMs < 0 || deadlineMs > 1<<62:
			// Deadlines outside the range open accepts are never issued.
		case err != nil:
			t.Fatalf("open(seal(c)) = %v", err)
		case !sameClaims(got, c):
			t.Fatalf("open(seal(c)) = %+v, want %+v", got, c)
		}

		if bytes.Equal(secret, keyA) || bytes.Equal(secret, keyB) {
			return // the forger guessed a real key
		}
		forger := mustKeyring(t, secret)
		forged := forger.Seal(c, stream, consumer, principal)
		if got, err := verifier.Open(forged, stream, consumer, principal); !errors.Is(err, errs.ErrTokenUnknownKey) && !errors.Is(err, errs.ErrTokenInvalid) {
			t.Fatalf("token sealed with an unknown key: open = %+v, %v; want errs.ErrTokenUnknownKey", got, err)
		}
		if _, err := verifier.Open(forged, tokStream, tokConsumer, tokPrincipal); err == nil {
			t.Fatalf("token sealed with an unknown key opened for %s/%s", tokStream, tokConsumer)
		}
	})
}

// The bytes of a token are fixed: a replica opens the tokens of the releases
// before it, versions 1 (before the split MAC), 2 and 3 (before Start), and
// seals version 4 as this release does.
func TestTokenFormatIsStable(t *testing.T) {
	kr, err := NewKeyring([]byte("0123456789abcdef0123456789abcdef"))
	if err != nil {
		t.Fatal(err)
	}
	c := Claims{Issuer: IssuerID{1, 2, 3, 4, 5, 6, 7, 8}, StreamSeq: 1234567, ConsumerSeq: 7654321, Delivered: 3, Deadline: time.UnixMilli(1764547200123)}
	started := c
	started.Start = c.Deadline.Add(-27 * time.Second)
	const want = "BLcLMikBAgMEBQYHCIZWC4mHrUuxl9MDA_uI1rmtM_nSAQDEFfynmYUCI3uz0d6HoeJz"
	if got := kr.Seal(started, "ORDERS", "billing", "alice"); got != want {
		t.Fatalf("token %s, want %s", got, want)
	}
	if got := kr.Sealer("ORDERS", "billing", "alice").Seal(started); got != want {
		t.Fatalf("Sealer: token %s, want %s", got, want)
	}
	const v2 = "ArcLMikBAgMEBQYHCIZWC4mHrUuxl9MDA_uI1rmtM2X0czZ4lJEUmWmSdjAg_q8"
	const v1 = "AbcLMikBAgMEBQYHCIZWC4mHrUuxl9MDA_uI1rmtM4z3PY9HYBQ0rJ2R3bG1SGM"
	for tok, claims := range map[string]Claims{want: started, v2: c, v1: c} {
		if got, err := kr.Open(tok, "ORDERS", "billing", "alice"); err != nil || got != claims {
			t.Fatalf("open %s: %+v, %v", tok, got, err)
		}
		if _, err := kr.Open(tok, "ORDERS", "audit", "alice"); !errors.Is(err, errs.ErrTokenWrongConsumer) {
			t.Fatalf("open %s for another consumer: %v", tok, err)
		}
	}
}
