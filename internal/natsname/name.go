// Package natsname is the one rule for the names of streams and consumers
// that jetgate accepts, in requests and in its configuration alike.
package natsname

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxLen bounds stream and consumer names, as the NATS server does.
const MaxLen = 255

// Check reports whether name is a valid stream or consumer name. field names
// it in the error ("stream", "--consumer", …).
func Check(field, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s is required", field)
	case len(name) > MaxLen:
		return fmt.Errorf("%s is longer than %d bytes", field, MaxLen)
	case strings.ContainsAny(name, ".*> /\\") || strings.ContainsFunc(name, unicode.IsControl) || !utf8.ValidString(name):
		return fmt.Errorf("%s %q is not a valid NATS name (no dots, wildcards, slashes or spaces)", field, name)
	}
	return nil
}

// Key names a stream's consumer in a JetStream KV key, which refuses
// characters that names may hold: 16 hex digits of a hash of both names.
func Key(stream, consumer string) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	for _, f := range [...]string{stream, consumer} {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(f)))])
		h.Write([]byte(f))
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// The streams jetgate makes for itself: the settle ledger's and the
// roster's KV buckets, the dead-letter advisories' work queue, and the
// stream where those of a consumer set aside wait. They are never served,
// whatever a file entry or an on_demand pattern says: a caller who could
// pause or consume them would stop dead letters for every tenant, or read
// and forge other replicas' state.
var internalStreams = []string{"KV_jetgate_settles", "KV_jetgate_members", "JETGATE_ADVISORIES", "JETGATE_DEAD_LETTERS_WAITING"}

// Internal reports whether stream is one jetgate makes for itself.
func Internal(stream string) bool {
	for _, s := range internalStreams {
		if s == stream {
			return true
		}
	}
	return false
}

// InternalStreams are the streams jetgate makes for itself.
func InternalStreams() []string { return append([]string(nil), internalStreams...) }
