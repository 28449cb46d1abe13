package config

import (
	"fmt"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ByteSize is a number of bytes, written as a whole number (1048576) or
// with a unit: B, KiB, MiB, GiB (powers of 1024) or KB, MB, GB (of 1000).
type ByteSize int64

var byteUnits = []struct {
	suffix string
	size   int64
}{ // longest suffixes first, so that "MiB" is not read as "B"
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1},
}

func parseByteSize(s string) (ByteSize, error) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return ByteSize(n), nil
	}
	for _, u := range byteUnits {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		if err != nil || n > (1<<62)/u.size || n < -(1<<62)/u.size {
			break
		}
		return ByteSize(n * u.size), nil
	}
	return 0, fmt.Errorf("%s is not a size (a whole number of bytes, or with a unit: 512KiB, 1MiB, 1MB)", quote(s))
}

// UnmarshalYAML reads a size.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	v, err := parseByteSize(n.Value)
	if err != nil {
		return err
	}
	*b = v
	return nil
}

// MarshalYAML writes a whole number of KiB, MiB or GiB with its unit, else
// the bytes.
func (b ByteSize) MarshalYAML() (any, error) {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b != 0 && int64(b)%u.size == 0 {
			return strconv.FormatInt(int64(b)/u.size, 10) + u.suffix, nil
		}
	}
	return int64(b), nil
}
