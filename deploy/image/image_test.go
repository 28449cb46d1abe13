package image

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// src is the jetgate repository this module lives in.
const src = "../.."

// written builds the host's image twice, to two tarballs, once for all the
// tests of the package.
var written = sync.OnceValues(func() ([2]string, error) {
	dir, err := os.MkdirTemp("", "jetgate-image-test-")
	if err != nil {
		return [2]string{}, err
	}
	var paths [2]string
	for i := range paths {
		paths[i] = filepath.Join(dir, "jetgate"+string(rune('a'+i))+".tar")
		if _, err := WriteFile(context.Background(), Options{Src: src}, paths[i], "jetgate:test"); err != nil {
			return paths, err
		}
	}
	return paths, nil
})

// loaded is the image as `docker load` would read it from the tarball.
func loaded(t *testing.T) v1.Image {
	t.Helper()
	paths, err := written()
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(paths[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// Two builds of the same commit give the same tarball, byte for byte, so
// the same digest.
func TestSameCommitSameImage(t *testing.T) {
	paths, err := written()
	if err != nil {
		t.Fatal(err)
	}
	var sums [2][32]byte
	for i, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sums[i] = sha256.Sum256(b)
	}
	if sums[0] != sums[1] {
		t.Fatalf("two builds wrote different tarballs: %x, %x", sums[0], sums[1])
	}
	var digests [2]v1.Hash
	for i, p := range paths {
		img, err := tarball.ImageFromPath(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if digests[i], err = img.Digest(); err != nil {
			t.Fatal(err)
		}
	}
	if digests[0] != digests[1] {
		t.Errorf("digests %s and %s", digests[0], digests[1])
	}
}

func TestImageConfig(t *testing.T) {
	img := loaded(t)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != "linux" || cf.Architecture != runtime.GOARCH {
		t.Errorf("platform %s/%s; want linux/%s", cf.OS, cf.Architecture, runtime.GOARCH)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q; want 65532:65532", c.User)
	}
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/jetgate"}) || len(c.Cmd) != 0 || len(c.Shell) != 0 {
		t.Errorf("entrypoint %q, cmd %q, shell %q; want jetgate alone", c.Entrypoint, c.Cmd, c.Shell)
	}
	if len(c.ExposedPorts) != 2 || !has(c.ExposedPorts, "9090/tcp") || !has(c.ExposedPorts, "8080/tcp") {
		t.Errorf("exposed ports %v", c.ExposedPorts)
	}
	if !slices.Contains(c.Env, "JETGATE_GRPC_ADDR=:9090") || !slices.Contains(c.Env, "JETGATE_HTTP_ADDR=:8080") {
		t.Errorf("env %v does not listen on the exposed ports", c.Env)
	}
	st, err := GitStamp(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	if !cf.Created.Time.Equal(st.Created) {
		t.Errorf("created %v; want the commit's time %v", cf.Created.Time, st.Created)
	}
	for k, v := range Labels(st) {
		if c.Labels[k] != v || v == "" {
			t.Errorf("label %s=%q; want %q", k, c.Labels[k], v)
		}
	}
}

func has(m map[string]struct{}, k string) bool { _, ok := m[k]; return ok }

// rootFiles reads the image's flattened root filesystem.
func rootFiles(t *testing.T, img v1.Image) map[string]*tar.Header {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := map[string]*tar.Header{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		files[strings.TrimSuffix(h.Name, "/")] = h
	}
}

// The image holds jetgate and the user it runs as, nothing else: no shell,
// no package manager.
func TestRootFSHoldsNoShell(t *testing.T) {
	files := rootFiles(t, loaded(t))
	want := []string{"etc", "etc/group", "etc/passwd", "tmp", "usr", "usr/local", "usr/local/bin", "usr/local/bin/jetgate", "var", "var/lib", "var/lib/jetgate"}
	if got := slices.Sorted(mapKeys(files)); !slices.Equal(got, want) {
		t.Errorf("files %v; want %v", got, want)
	}
	for _, sh := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/apt", "sbin/apk"} {
		if _, ok := files[sh]; ok {
			t.Errorf("the image has %s", sh)
		}
	}
	if h := files["usr/local/bin/jetgate"]; h.Mode != 0o755 || h.Uid != 0 {
		t.Errorf("jetgate mode %o uid %d; want 755 root", h.Mode, h.Uid)
	}
	if h := files["var/lib/jetgate"]; h.Uid != 65532 || h.Mode != 0o700 {
		t.Errorf("working directory uid %d mode %o; want the user's own", h.Uid, h.Mode)
	}
	if h := files["tmp"]; h.Mode != 0o1777 {
		t.Errorf("/tmp mode %o; want 1777", h.Mode)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// unpack writes the image's root filesystem under dir.
func unpack(t *testing.T, img v1.Image, dir string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.Clean("/"+h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(path, 0o755)
		case tar.TypeReg:
			var b bytes.Buffer
			if _, err = io.Copy(&b, tr); err == nil {
				err = os.WriteFile(path, b.Bytes(), os.FileMode(h.Mode)&0o777)
			}
		default:
			t.Fatalf("unexpected entry %s of type %c", h.Name, h.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkStatic: a static, trimpath, cgo-free binary for machine.
func checkStatic(t *testing.T, path string, machine elf.Machine) {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Machine != machine {
		t.Errorf("machine %v; want %v", f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("program header %v: the binary is not static", p.Type)
		}
	}
	bi, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("build settings %v; want CGO_ENABLED=0 and -trimpath", settings)
	}
}

func TestBinaryIsStatic(t *testing.T) {
	dir := t.TempDir()
	unpack(t, loaded(t), dir)
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[runtime.GOARCH]
	checkStatic(t, filepath.Join(dir, Binary), want)
}

// The arm64 image is built on any host, cross-compiled.
func TestArm64(t *testing.T) {
	if testing.Short() {
		t.Skip("a second full build")
	}
	img, err := Build(context.Background(), Options{Src: src, Platform: "linux/arm64"})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Architecture != "arm64" || cf.Variant != "v8" || cf.OS != "linux" {
		t.Errorf("platform %s/%s/%s; want linux/arm64/v8", cf.OS, cf.Architecture, cf.Variant)
	}
	dir := t.TempDir()
	unpack(t, img, dir)
	checkStatic(t, filepath.Join(dir, Binary), elf.EM_AARCH64)
}

func TestPlatformRefused(t *testing.T) {
	for _, p := range []string{"windows/amd64", "linux/s390x", "linux", "darwin/arm64"} {
		if _, _, err := platform(p); err == nil {
			t.Errorf("platform %q accepted", p)
		}
	}
	for p, want := range map[string]string{"linux/amd64": "amd64", "linux/arm64": "arm64", "linux/arm64/v8": "arm64", "": runtime.GOARCH} {
		if _, arch, err := platform(p); err != nil || arch != want {
			t.Errorf("platform %q: %s, %v; want %s", p, arch, err, want)
		}
	}
}
