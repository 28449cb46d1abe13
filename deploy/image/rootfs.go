package image

import (
	"archive/tar"
	"bytes"
	"strings"
	"time"
)

// entry is one file or directory of the image.
type entry struct {
	name string // without a leading /, directories ending in /
	mode int64
	uid  int
	data []byte
}

// passwd and group name root and the nonroot user (65532) the image runs
// as, so that tools that look a user up find one.
const (
	passwd = "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:" + WorkDir + ":/sbin/nologin\n"
	group  = "root:x:0:\nnonroot:x:65532:\n"
)

// Files lists the image's root filesystem: the binary, the user, a /tmp and
// the user's working directory. Nothing else: no shell, no package manager.
func files(bin []byte) []entry {
	return []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "tmp/", mode: 0o1777},
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: "usr/local/bin/", mode: 0o755},
		{name: strings.TrimPrefix(Binary, "/"), mode: 0o755, data: bin},
		{name: "var/", mode: 0o755},
		{name: "var/lib/", mode: 0o755},
		{name: strings.TrimPrefix(WorkDir, "/") + "/", mode: 0o700, uid: 65532},
	}
}

// rootFS is the layer's tar: entries in order of name, every time mtime,
// no user or group names, so that it is the same for the same binary.
func rootFS(bin []byte, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range files(bin) {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: mtime, Format: tar.FormatPAX}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
