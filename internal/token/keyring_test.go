package token

import (
	"strings"
	"testing"
)

// Rotation in two steps: a verify-only key verifies what it signs elsewhere
// but never signs here, and a file of only verify-only keys is refused.
func TestLoadKeyringVerifyOnly(t *testing.T) {
	c := testClaims()
	oldRing := mustKeyring(t, keyA)
	newRing := mustKeyring(t, keyB)

	// Step 1: the new key is known to verify only.
	step1, err := LoadKeyring(writeKeyFile(t, string(keyA)+"\n"+VerifyOnly+string(keyB)+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	tok := step1.Seal(c, tokStream, tokConsumer, "")
	if _, err := oldRing.Open(tok, tokStream, tokConsumer, ""); err != nil {
		t.Fatalf("step 1 still signs with the old key: a replica with only the old key cannot open it: %v", err)
	}
	if _, err := step1.Open(newRing.Seal(c, tokStream, tokConsumer, ""), tokStream, tokConsumer, ""); err != nil {
		t.Fatalf("step 1 does not verify tokens of the new key: %v", err)
	}

	// Step 2: the new key signs (a verify-only line may come first); the old
	// one still verifies.
	step2, err := LoadKeyring(writeKeyFile(t, "# rotated\n"+VerifyOnly+" "+string(keyA)+"\n"+string(keyB)+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	tok = step2.Seal(c, tokStream, tokConsumer, "")
	if _, err := newRing.Open(tok, tokStream, tokConsumer, ""); err != nil {
		t.Fatalf("step 2 does not sign with the new key: %v", err)
	}
	if _, err := step2.Open(oldRing.Seal(c, tokStream, tokConsumer, ""), tokStream, tokConsumer, ""); err != nil {
		t.Fatalf("step 2 no longer verifies the old key's tokens: %v", err)
	}

	path := writeKeyFile(t, VerifyOnly+string(keyA)+"\n")
	if _, err := LoadKeyring(path); err == nil || !strings.Contains(err.Error(), "one must sign") || strings.Contains(err.Error(), string(keyA)) {
		t.Fatalf("a file with no signing key: %v; want a refusal that does not show the key", err)
	}
}

func TestSignAndVerify(t *testing.T) {
	a, b := mustKeyring(t, keyA), mustKeyring(t, keyB)
	both := mustKeyring(t, keyB, keyA)
	parts := [][]byte{[]byte("subject"), []byte("body")}
	sig := a.Sign(parts...)
	if !a.Verify(sig, parts...) || !both.Verify(sig, parts...) {
		t.Fatal("a signature does not verify under the key that made it")
	}
	if b.Verify(sig, parts...) {
		t.Fatal("a signature verifies under another key")
	}
	for name, other := range map[string][][]byte{
		"changed part": {[]byte("subject"), []byte("bodY")},
		"shifted":      {[]byte("subjectb"), []byte("ody")},
		"one part":     {[]byte("subjectbody")},
		"extra part":   {[]byte("subject"), []byte("body"), nil},
	} {
		if a.Verify(sig, other...) {
			t.Errorf("%s: verifies", name)
		}
	}
	for _, bad := range []string{"", ".", sig + "x", "zz" + sig, strings.Replace(sig, ".", "", 1), sig[:len(sig)-2]} {
		if a.Verify(bad, parts...) {
			t.Errorf("Verify(%q) = true", bad)
		}
	}
	// A token is not a signature of its own bytes, and the other way round.
	tok := a.Seal(testClaims(), tokStream, tokConsumer, "")
	if a.Verify(tok, []byte(tok)) {
		t.Error("a token verifies as a signature")
	}
}
