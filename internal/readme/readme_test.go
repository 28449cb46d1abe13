// Package readme_test runs the README's shell blocks, as extracted from
// README.md itself, in order, on a copy of the repository, as a newcomer
// with only Go (and the curl the README uses) would: servers in terminals of
// their own, the other blocks in one shell session, shown output compared.
package readme_test

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// blockTimeout bounds one block; a server's first start compiles jetgate.
const blockTimeout = 5 * time.Minute

func TestREADMERunsAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's walkthroughs, which build and start jetgate: not with -short")
	}
	for _, tool := range []string{"bash", "curl", "go", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s, which the README's blocks use: %v", tool, err)
		}
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parse(string(text))
	if err != nil {
		t.Fatal(err)
	}
	for _, addr := range []string{"127.0.0.1:8080", "127.0.0.1:9090", "127.0.0.1:8000"} {
		if l, err := net.Listen("tcp", addr); err != nil {
			t.Skipf("%s is taken by another process, and the README's blocks listen there: %v", addr, err)
		} else {
			_ = l.Close()
		}
	}
	clone := copyRepo(t, root)
	sh := newShell(t, clone)
	var running []*server
	t.Cleanup(func() { stopAll(t, running) })
	for _, b := range blocks {
		name := "README.md:" + strconv.Itoa(b.line)
		if b.skip != "" {
			t.Run(name, func(t *testing.T) { t.Skip(b.skip) })
			continue
		}
		ok := t.Run(name, func(t *testing.T) {
			if b.stop {
				stopAll(t, running)
				running = nil
			}
			if b.server {
				running = append(running, startServer(t, clone, b))
				return
			}
			out := sh.run(t, b.text)
			check(t, b, out)
		})
		if !ok {
			return // the blocks after it build on it
		}
	}
}

// check fails the test on an error answer the block does not expect, and on
// output that differs from what the README shows.
func check(t *testing.T, b block, out []string) {
	t.Helper()
	for _, l := range out {
		if strings.HasPrefix(l, `{"code":`) && !b.errors {
			t.Errorf("an error answer: %s", l)
		}
	}
	if b.output == nil {
		return
	}
	if missing := matches(b.output, out); len(missing) > 0 {
		t.Errorf("the README shows\n%s\nbut the block printed\n%s\n(missing: %q)",
			strings.Join(b.output, "\n"), strings.Join(out, "\n"), missing)
	}
}

// copyRepo copies the repository's files (tracked, and new ones git does
// not ignore) to a fresh directory: a clone, less its history.
func copyRepo(t *testing.T, root string) string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	list, err := cmd.Output()
	if err != nil {
		t.Skipf("git ls-files: %v (a copy of the repository without git?)", err)
	}
	dst := t.TempDir()
	for _, f := range strings.Split(strings.TrimRight(string(list), "\x00"), "\x00") {
		src := filepath.Join(root, f)
		info, err := os.Lstat(src)
		if err != nil {
			continue // deleted, not yet staged
		}
		if !info.Mode().IsRegular() {
			continue
		}
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(dst, filepath.Dir(f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, info.Mode().Perm()); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// The project is under the Apache License 2.0, as NATS and grpc-gateway.
func TestLicenseIsApache2(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "LICENSE"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("Apache License")) || !bytes.Contains(b, []byte("Version 2.0, January 2004")) {
		t.Fatalf("LICENSE is not the Apache License 2.0:\n%.200s", b)
	}
}
