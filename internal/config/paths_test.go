package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Paths in a file are relative to the file, not to the working directory;
// absolute ones stay; a flag's path stays relative to the working directory.
func TestPathsAreRelativeToTheFile(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "deploy", "conf")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	secret := "whsec_" + strings.Repeat("A", 44) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "push-secret"), []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("t0ken\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "jetgate.yaml")
	text := `nats: {creds: nats.creds, tls: {ca: /etc/ca.pem}}
embedded: {data_dir: data}
tokens: {key_files: [keys, ../shared/keys]}
auth: {jwt: {jwks_file: jwks.json, issuer: "https://idp.test", audience: jetgate}}
streams: [{name: ORDERS, subjects: ["orders.>"]}, {name: DEAD, subjects: ["dead.>"]}]
consumers:
  - stream: ORDERS
    name: shipping
    dead_letter: {subject: dead.shipping}
    push: {url: "http://127.0.0.1:8000/", signing_secret_file: push-secret, bearer_token_file: token}
`
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	c, err := Resolve(filepath.Join("deploy", "conf", "jetgate.yaml"), DefaultFlags())
	if err != nil {
		t.Fatal(err)
	}
	in := func(p string) string { return filepath.Join("deploy", "conf", p) }
	for got, want := range map[string]string{
		c.NATS.Creds: in("nats.creds"), c.NATS.TLS.CA: "/etc/ca.pem", c.Embedded.DataDir: in("data"),
		c.Tokens.KeyFiles[0]: in("keys"), c.Tokens.KeyFiles[1]: filepath.Join("deploy", "shared", "keys"),
		c.Auth.JWT.JWKSFile: in("jwks.json"), c.Consumers[0].Push.SigningSecretFile: in("push-secret"),
		c.Consumers[0].Push.BearerTokenFile: in("token"),
	} {
		if got != want {
			t.Errorf("%q; want %q", got, want)
		}
	}
	// check-config prints them resolved.
	var out strings.Builder
	if err := Write(&out, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), in("push-secret")) {
		t.Errorf("check-config does not print the resolved path:\n%s", out.String())
	}
	// A flag's path is the working directory's.
	f := DefaultFlags()
	f.DataDir, f.Given = "here", map[string]bool{"data-dir": true}
	if c, err = Resolve(filepath.Join("deploy", "conf", "jetgate.yaml"), f); err != nil || c.Embedded.DataDir != "here" {
		t.Errorf("--data-dir here: %q, %v; want here", c.Embedded.DataDir, err)
	}
}

// The push example checks from the repository's parent directory, as from
// its root.
func TestPushExampleChecksFromAnotherDirectory(t *testing.T) {
	wd, _ := os.Getwd()
	repo := filepath.Dir(filepath.Dir(wd))
	t.Chdir(filepath.Dir(repo))
	c, err := Resolve(filepath.Join(filepath.Base(repo), "examples", "push.yaml"), DefaultFlags())
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(filepath.Base(repo), "examples", "push-data"); c.Embedded.DataDir != want {
		t.Errorf("data_dir %q; want %q", c.Embedded.DataDir, want)
	}
}

// The README's example of current JetStream's consumers is valid.
func TestPriorityExampleFile(t *testing.T) {
	c, err := Resolve(filepath.Join("..", "..", "examples", "priority.yaml"), DefaultFlags())
	if err != nil {
		t.Fatal(err)
	}
	cs := c.ConsumerConfigs()
	if len(cs) != 3 || cs[1].Name != "workers" || cs[1].PriorityPolicy == nil || cs[2].Name != "batch" || cs[2].PriorityPolicy == nil {
		t.Fatalf("consumers %+v", cs)
	}
	if s := c.StreamNamed("ORDERS"); s == nil || !s.AllowMsgTTL || !s.AllowAtomic {
		t.Fatalf("ORDERS %+v; want ttl and atomic batches allowed", s)
	}
}
