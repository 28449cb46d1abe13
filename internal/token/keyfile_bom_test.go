package token

import "testing"

// A key file saved with a UTF-8 byte order mark (PowerShell 5.1's
// Set-Content -Encoding UTF8, Notepad before 2019) loads the keys the
// operator wrote: the BOM is no part of its first line. Before, it kept a
// first comment line from reading as a comment, and the comment's text (the
// chart's Secret starts with a public one, long enough) became the signing
// key, with which anyone who read it could seal tokens.
func TestAKeyFileWithABOMSignsWithItsKeyNotItsComment(t *testing.T) {
	const bom = "\ufeff"
	comment := "# jetgate token key, made by the chart: every replica shares it"
	kr, err := LoadKeyring(writeKeyFile(t, bom+comment+"\n"+string(keyA)+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := testClaims()
	if got, want := kr.Seal(c, tokStream, tokConsumer, ""), mustKeyring(t, keyA).Seal(c, tokStream, tokConsumer, ""); got != want {
		t.Error("a key file with a BOM does not sign with its key line")
	}
	forged := mustKeyring(t, []byte(bom+comment)).Seal(c, tokStream, tokConsumer, "")
	if _, err := kr.Open(forged, tokStream, tokConsumer, ""); err == nil {
		t.Error("a token sealed with the comment's text opens")
	}
}

// The same key in two replicas' files, one saved with a BOM (and CRLF), is
// the same key.
func TestAKeyAfterABOMIsTheKey(t *testing.T) {
	kr, err := LoadKeyring(writeKeyFile(t, "\ufeff"+string(keyA)+"\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	tok := mustKeyring(t, keyA).Seal(testClaims(), tokStream, tokConsumer, "")
	if _, err := kr.Open(tok, tokStream, tokConsumer, ""); err != nil {
		t.Fatalf("a file holding the key after a BOM does not open the key's tokens: %v", err)
	}
}
