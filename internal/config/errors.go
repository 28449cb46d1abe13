package config

import (
	"fmt"
	"strconv"
	"strings"
)

// Error is a bad setting. It names the field by its path in the file
// (consumers[1].ack_wait, indexes from 0) and the line, or the flag when a
// flag or its environment variable gave the value.
type Error struct {
	File string // the configuration file; "" for flags alone
	Line int    // 0 when unknown
	Path string // "consumers[1].ack_wait"; "" for the file as a whole
	Flag string // "--ack-wait" when a flag gave the value
	Msg  string
}

func (e *Error) Error() string {
	if e.Flag != "" {
		return e.Flag + ": " + e.Msg
	}
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Path != "" {
		b.WriteString(e.Path + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errorf makes the Error for the field at path: its line in the file, or
// the flag that set it. Start-up uses it for what only a running process
// origins are where a configuration's values came from: the file and the
// line of each field it names, and the flag (or environment variable) that
// set a field. Errors name them (errorf), and so does check-config.
type origins struct {
	file  string            // the file it was read from, "" for flags alone
	lines map[string]int    // path → line, for every field the file names
	flags map[string]string // path → the flag (or its env variable) that set it
}

// can find wrong (an address taken, a stream missing on the server).
func (c *origins) Errorf(path, format string, args ...any) error {
	return c.errorf(path, format, args...)
}

func (c *origins) errorf(path, format string, args ...any) *Error {
	e := &Error{Path: path, Msg: fmt.Sprintf(format, args...)}
	line, flag := c.origin(path)
	switch {
	case flag != "":
		e.Flag = flag
	default:
		e.File, e.Line = c.file, line
	}
	return e
}

// origin is where the value at path came from: the line of the nearest
// field the file names, or the flag that set it.
func (c *origins) origin(path string) (line int, flag string) {
	for p := path; p != ""; p = parent(p) {
		if f, ok := c.flags[p]; ok {
			return 0, f
		}
		if l, ok := c.lines[p]; ok {
			return l, ""
		}
	}
	return 0, ""
}

// label is how a message mentions another field: its flag when a flag set
// it, else its name.
func (c *origins) label(path string) string {
	if _, flag := c.origin(path); flag != "" {
		return flag
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// named reports whether the file or a flag names the field at path.
func (c *origins) named(path string) bool {
	_, inFile := c.lines[path]
	_, byFlag := c.flags[path]
	return inFile || byFlag
}

// parent is the path one level up: consumers[1].ack_wait → consumers[1]
// → consumers → "".
func parent(path string) string {
	if strings.HasSuffix(path, "]") {
		if i := strings.LastIndexByte(path, '['); i >= 0 {
			return path[:i]
		}
	}
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

func join(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

func quote(s string) string { return strconv.Quote(s) }
