package auth

import (
	"crypto/subtle"
	"reflect"
)

// SetCompare makes a compare API key hashes with f.
func SetCompare(a *Authenticator, f func(x, y []byte) int) { a.compare = f }

// ComparesInConstantTime reports whether a compares API key hashes with
// subtle.ConstantTimeCompare.
func ComparesInConstantTime(a *Authenticator) bool {
	return reflect.ValueOf(a.compare).Pointer() == reflect.ValueOf(subtle.ConstantTimeCompare).Pointer()
}
